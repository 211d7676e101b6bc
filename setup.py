"""Only the C extensions live here; everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            f"minikafka.storage.{name}",
            [f"minikafka/storage/{name}.c"],
            depends=["minikafka/storage/_records_walk.h"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
        )
        for name in ("_batch_scan", "_record_codec")
    ]
)
