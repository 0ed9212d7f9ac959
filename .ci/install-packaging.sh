#!/usr/bin/env bash
# Installs what tests/packaging.rs and tests/live_systemd.rs need on a fresh Debian machine: dpkg
# (present), rpm (to query the .rpm), man-db (to render the man pages), systemd-analyze (package systemd), systemd-nspawn (package
# systemd-container, to boot a throwaway systemd as PID 1), and the cargo-deb / cargo-generate-rpm
# tools. Each only when missing, so a warm machine pays nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v rpm >/dev/null || need+=(rpm)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v systemd-nspawn >/dev/null || need+=(systemd-container)
command -v deb-systemd-helper >/dev/null || need+=(init-system-helpers)
command -v dpkg-shlibdeps >/dev/null || need+=(dpkg-dev)
# man (man-db, with groff-base) renders the installed man pages in the .deb test.
command -v man >/dev/null || need+=(man-db)
command -v nroff >/dev/null || need+=(groff-base)
if [ "${#need[@]}" -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi

tools=()
command -v cargo-deb >/dev/null || tools+=(cargo-deb)
command -v cargo-generate-rpm >/dev/null || tools+=(cargo-generate-rpm)
if [ "${#tools[@]}" -gt 0 ]; then
  "$(dirname "$0")/cargo-install" "${tools[@]}"
fi
