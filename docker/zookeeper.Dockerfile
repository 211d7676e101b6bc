# ZooKeeper for the minikafka compose cluster: Debian bookworm's `zookeeper` package (3.8.0),
# one standalone server in the foreground. Build context: docker/ (see docker-compose.yml):
#   docker build -f docker/zookeeper.Dockerfile -t minikafka-zookeeper:dev docker
FROM debian:bookworm-slim

# `zookeeper` pulls in the JRE (default-jre) and, through libzookeeper-java, the slf4j
# log4j binding and log4j 1.2 that the command below puts on the class path.
# The package puts a placeholder `myid` (a symlink to /etc/zookeeper/conf/myid, "replace
# this text ...") into the data directory; a standalone server must not have one, it would
# refuse to start.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends zookeeper \
    && rm -rf /var/lib/apt/lists/* \
    && rm -f /var/lib/zookeeper/myid

COPY zookeeper/zoo.cfg zookeeper/log4j.properties /etc/zookeeper/minikafka/

# The package's `zookeeper` user owns /var/lib/zookeeper (dataDir); a new named volume
# mounted there takes that ownership from the image.
USER zookeeper
WORKDIR /var/lib/zookeeper
EXPOSE 2181

# `srvr` answers "Mode: standalone" only once the server serves requests (`ruok` says
# "imok" earlier). bash, not sh: Debian's sh (dash) has no /dev/tcp.
HEALTHCHECK --interval=5s --timeout=5s --start-period=30s --retries=12 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/2181 && printf srvr >&3 && grep -q '^Mode: ' <&3"]

# What Debian's `zkServer.sh start-foreground` runs, without its /etc/zookeeper/conf/environment
# (which sends the log to /var/log/zookeeper): the JVM in the foreground, logging to stdout
# (same command as minikafka/zk/server.py). zookeeper.jar's manifest lists its other jars.
# Extra JVM options: set JAVA_TOOL_OPTIONS in the environment.
CMD ["java", "-Xmx256m", "-XX:+UseSerialGC", "-Djava.awt.headless=true", \
     "-Dlog4j.configuration=file:/etc/zookeeper/minikafka/log4j.properties", \
     "-Dzookeeper.jmx.log4j.disable=true", \
     "-cp", "/etc/zookeeper/minikafka:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar", \
     "org.apache.zookeeper.server.quorum.QuorumPeerMain", "/etc/zookeeper/minikafka/zoo.cfg"]
