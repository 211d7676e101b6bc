"""Storage: record batch codec, segments, offset index, log, log manager, checkpoint files, leader-epoch cache."""
