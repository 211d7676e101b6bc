"""Who may do what: Kafka's principals (principal.py), ACL vocabulary (operations.py), ACLs
and their filters (acls.py), the sans-IO AclAuthorizer (authorizer.py) and the ACLs'
ZooKeeper layout and bytes (acl_zk.py)."""
