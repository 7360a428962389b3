#!/usr/bin/env bash
# Installs Debian's Chromium, which the HTML report test uses headless (skipped without it).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
chromium --version
