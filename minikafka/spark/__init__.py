"""minikafka topics as a PySpark data source and sink (format "minikafka"), modelled on
Spark's Kafka connector: `spark.dataSource.register(MinikafkaDataSource)`.

Needs the `spark` extra (`pip install -e '.[spark]'`: pyspark, pyarrow, pandas) and Java 17.
"""

from minikafka.spark.lifecycle import run_until_stopped
from minikafka.spark.options import SparkOptionError
from minikafka.spark.source import MinikafkaDataSource

__all__ = ["MinikafkaDataSource", "SparkOptionError", "run_until_stopped"]
