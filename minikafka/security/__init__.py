"""Who may do what: Kafka's ACL operations and what each resource type supports."""
