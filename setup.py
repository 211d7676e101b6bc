"""Only the C extension lives here; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "minikafka.storage._batch_scan",
            ["minikafka/storage/_batch_scan.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
    ]
)
