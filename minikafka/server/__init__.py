"""Broker process wiring: configuration, TCP server, request dispatch, admin HTTP."""
