#!/usr/bin/env bash
# Make this machine ready for `docker compose up -d --wait` and the tests in tests/docker:
#
#   1. the Docker engine answers (started if it is installed but not running);
#   2. `docker compose` is Compose v2 (the CLI plugin) and `docker buildx` is there: where
#      they are missing (Debian bookworm packages only Compose v1 as `docker-compose`), the
#      plugins are taken from Debian's own docker-compose and docker-buildx packages of the
#      next release (static Go programs) and put into /usr/local/lib/docker/cli-plugins;
#   3. the base image debian:bookworm-slim exists (scripts/docker-base-image.sh builds it
#      from Debian's packages on a machine that cannot pull from a registry);
#   4. docker/wheels/ holds the wheels of docker/image-wheels.txt (downloaded with pip);
#   5. docker/spark-wheels/ holds those of docker/spark-wheels.txt, for the Spark nodes of
#      the `spark` profile (the binary wheels downloaded, pyspark's built from its sdist:
#      PyPI has no pyspark wheel; pip's cache makes a second build cheap).
#
#   scripts/docker-setup.sh          (root for anything it has to install or start)
#
# Every step that finds its part in place does nothing. Exits non-zero, saying what is
# missing, when a step cannot be done.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mirror=${MIRROR:-http://deb.debian.org/debian}
plugin_dir=/usr/local/lib/docker/cli-plugins
# The Debian release whose docker-compose package is Compose v2 (bookworm's is v1).
plugin_release=${PLUGIN_RELEASE:-trixie}

say() { echo "docker-setup: $*" >&2; }
die() {
    say "$*"
    exit 1
}

command -v docker >/dev/null ||
    die "no docker command; install a Docker Engine (Debian: apt-get install docker.io)"

# 1. The engine.
if ! docker info >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "the Docker engine does not answer, and starting it needs root"
    say "the Docker engine does not answer; starting it"
    if command -v systemctl >/dev/null && systemctl start docker 2>/dev/null; then
        :
    elif command -v service >/dev/null && service docker start >/dev/null 2>&1; then
        :
    elif command -v dockerd >/dev/null; then
        nohup dockerd >/var/log/minikafka-dockerd.log 2>&1 &
    else
        die "the Docker engine is not running and there is no dockerd to start"
    fi
    for _ in $(seq 120); do
        docker info >/dev/null 2>&1 && break
        sleep 0.5
    done
    docker info >/dev/null 2>&1 || die "the Docker engine did not come up within 60 s"
fi

# 2. Compose v2 and buildx, as CLI plugins.
install_plugin() { # NAME: the Debian package and the plugin (docker-compose, docker-buildx)
    local name=$1 index file tmp
    [ "$(id -u)" = 0 ] || die "${name/-/ } is missing, and installing it needs root"
    if ! command -v curl >/dev/null || ! command -v xz >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl xz-utils >/dev/null
    fi
    say "installing the ${name/-/ } plugin from Debian $plugin_release's $name package"
    index=$(curl -fsSL "$mirror/dists/$plugin_release/main/binary-amd64/Packages.xz" | xz -d) ||
        die "cannot read Debian $plugin_release's package index from $mirror"
    file=$(awk -v pkg="$name" '
        $1 == "Package:" { found = ($2 == pkg) }
        found && $1 == "Filename:" { print $2; exit }' <<<"$index")
    [ -n "$file" ] || die "no $name package in Debian $plugin_release"
    tmp=$(mktemp -d)
    curl -fsSL -o "$tmp/$name.deb" "$mirror/$file" || die "cannot download $mirror/$file"
    dpkg-deb -x "$tmp/$name.deb" "$tmp/x"
    mkdir -p "$plugin_dir"
    install -m 0755 "$tmp/x/usr/libexec/docker/cli-plugins/$name" "$plugin_dir/"
    rm -rf "$tmp"
}
docker compose version >/dev/null 2>&1 || install_plugin docker-compose
docker buildx version >/dev/null 2>&1 || install_plugin docker-buildx
docker compose version >/dev/null 2>&1 || die "docker compose still does not work"

# 3. The base image.
"$root/scripts/docker-base-image.sh"

# 4. The wheels the broker image installs besides Debian's packages (docker/image-wheels.txt),
#    for the engine's CPU and bookworm's CPython 3.11: downloaded here, on the host, so the
#    image build needs no PyPI access of its own.
wheels=$root/docker/wheels
arch=$(docker info --format '{{.Architecture}}')
case $arch in
    amd64) arch=x86_64 ;;
    arm64) arch=aarch64 ;;
esac
missing=0
while read -r requirement; do
    case $requirement in '' | '#'*) continue ;; esac
    name=${requirement%%==*}
    version=${requirement#*==}
    compgen -G "$wheels/${name//-/_}-$version-*.whl" >/dev/null || missing=1
done <"$root/docker/image-wheels.txt"
if [ "$missing" = 1 ]; then
    say "downloading the wheels of docker/image-wheels.txt into docker/wheels/ ($arch)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --platform "manylinux_2_28_$arch" --python-version 3.11 --implementation cp --abi cp311 \
        -d "$wheels" -r "$root/docker/image-wheels.txt" ||
        die "cannot download the wheels of docker/image-wheels.txt (pip, PyPI)"
fi

# 5. The Spark image's wheels (docker/spark-wheels.txt), the same way, into
#    docker/spark-wheels/: kept apart from docker/wheels/, which the broker image copies
#    whole, so that they change nothing of the broker's layers.
spark_wheels=$root/docker/spark-wheels
missing=0
pyspark=
while read -r requirement; do
    case $requirement in '' | '#'*) continue ;; esac
    name=${requirement%%==*}
    version=${requirement#*==}
    if [ "$name" = pyspark ]; then
        pyspark=$requirement
        compgen -G "$spark_wheels/pyspark-$version-*.whl" >/dev/null || missing=1
    else
        compgen -G "$spark_wheels/${name//-/_}-$version-*.whl" >/dev/null || missing=1
    fi
done <"$root/docker/spark-wheels.txt"
if [ "$missing" = 1 ]; then
    [ -n "$pyspark" ] || die "docker/spark-wheels.txt pins no pyspark"
    say "downloading the wheels of docker/spark-wheels.txt into docker/spark-wheels/ ($arch)"
    grep -v '^pyspark==' "$root/docker/spark-wheels.txt" |
        python3 -m pip download --quiet --no-deps --only-binary=:all: \
            --platform "manylinux_2_28_$arch" --python-version 3.11 --implementation cp --abi cp311 \
            -d "$spark_wheels" -r /dev/stdin ||
        die "cannot download the wheels of docker/spark-wheels.txt (pip, PyPI)"
    say "building the $pyspark wheel (from PyPI's sdist) into docker/spark-wheels/"
    python3 -m pip wheel --quiet --no-deps -w "$spark_wheels" "$pyspark" ||
        die "cannot build the $pyspark wheel (pip, PyPI)"
fi
say "ready: $(docker compose version), engine $(docker info --format '{{.ServerVersion}}')"
