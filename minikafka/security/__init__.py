"""Who a connection is and what it may do, as Kafka decides it, sans IO: principals
(principal.py); TLS for SSL listeners (tls.py, ssl_principal.py, x500.py, certs.py);
SASL's mechanisms and exchange (plain.py, scram.py, jaas.py, sasl_server.py); and
authorization: the ACL vocabulary (operations.py), ACLs and their filters (acls.py), the
AclAuthorizer (authorizer.py) and the ACLs' ZooKeeper layout and bytes (acl_zk.py)."""
