"""Controller: `KafkaController` (controller.py) and one module per job it does, election strategies and replica assignment (pure), channel manager to brokers."""
