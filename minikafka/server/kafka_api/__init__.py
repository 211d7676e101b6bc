"""Kafka's APIs on the client listeners, one module per API family.

handler.py        a decoded request to its handler; the served versions
registry.py       how a handler declares its API and versions
model.py          kio's entities (a class per version) <-> one model per API
models/           the models of each family
cluster.py        ApiVersions, DescribeCluster
metadata.py       Metadata
produce.py        Produce
fetch.py          Fetch
list_offsets.py   ListOffsets, OffsetForLeaderEpoch
topics.py         CreateTopics, DeleteTopics, CreatePartitions
configs.py        DescribeConfigs, AlterConfigs, IncrementalAlterConfigs
groups.py         FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
                  ListGroups, DescribeGroups, DeleteGroups
group_offsets.py  OffsetCommit, OffsetFetch, OffsetDelete
producer_ids.py   InitProducerId
"""
