"""`python -m minikafka ...` runs the `minikafka` command."""

from minikafka.cli.main import main

main()
