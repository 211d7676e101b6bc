#!/usr/bin/env bash
# Create the base image the Dockerfiles start FROM (debian:bookworm-slim) on an engine that
# cannot pull it: a machine without access to an image registry.
#
#   scripts/docker-base-image.sh [TAG]        (default TAG: debian:bookworm-slim; needs root)
#
# An engine that already has TAG keeps it: nothing is built or replaced. Otherwise
# `debootstrap --variant=minbase bookworm` installs Debian bookworm from Debian's archive
# into a temporary directory, which is trimmed the way the official -slim image is (no
# documentation, man pages or locales beyond C; no apt lists or package cache) and imported
# with `docker import` under TAG. On a machine that can pull from a registry none of this is
# needed: `docker compose build` pulls debian:bookworm-slim itself.
#
#   MIRROR   Debian archive to bootstrap from (default http://deb.debian.org/debian)
set -euo pipefail

tag=${1:-debian:bookworm-slim}
mirror=${MIRROR:-http://deb.debian.org/debian}

if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "docker-base-image: $tag is already there; left as it is" >&2
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "docker-base-image: $tag is missing and debootstrap needs root; run this script as root" >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null; then
    echo "docker-base-image: installing Debian's debootstrap package..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

rootfs=$(mktemp -d /tmp/minikafka-rootfs.XXXXXX)
trap 'rm -rf "$rootfs"' EXIT

echo "docker-base-image: debootstrap --variant=minbase bookworm from $mirror ..." >&2
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
    tail -n 20 "$rootfs.log" >&2
    echo "docker-base-image: debootstrap failed (full log: $rootfs.log)" >&2
    exit 1
}
rm -f "$rootfs.log"

# The official image's apt sources (deb822), with updates and security.
rm -f "$rootfs/etc/apt/sources.list"
cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# Slim it as the official image does, and keep it slim for later apt-get installs.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
# Files go, directories stay: maintainer scripts (update-alternatives for java's man pages)
# expect /usr/share/man/man1 and its siblings to exist.
find "$rootfs/usr/share/man" "$rootfs/usr/share/info" -not -type d -delete
rm -rf "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/log/*.log
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
# No services start while packages install in an image build.
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 0755 "$rootfs/usr/sbin/policy-rc.d"

tar --numeric-owner -C "$rootfs" -c . |
    docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --message "debootstrap --variant=minbase bookworm (scripts/docker-base-image.sh)" - "$tag" >/dev/null
echo "docker-base-image: created $tag ($(docker image inspect --format '{{.Size}}' "$tag" | numfmt --to=iec) from Debian bookworm)" >&2
