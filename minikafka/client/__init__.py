"""Client library: producer, consumer, admin client, metadata cache."""
