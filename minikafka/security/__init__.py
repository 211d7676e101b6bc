"""Who a connection is and what it may do: principals, TLS for SSL listeners (tls.py,
ssl_principal.py, x500.py, certs.py) and Kafka's ACL operations."""
