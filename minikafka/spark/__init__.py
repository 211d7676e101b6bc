"""PySpark data source reading minikafka partitions."""
