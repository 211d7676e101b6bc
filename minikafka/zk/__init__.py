"""ZooKeeper adapter: the only package that imports kazoo (znode paths, JSON codecs, conditional writes, watches)."""
