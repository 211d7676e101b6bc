"""Controller: event loop, election strategies and replica assignment (pure), channel manager to brokers."""
