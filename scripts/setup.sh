#!/usr/bin/env bash
# Installs what lantern needs to build and test, from Debian's packages only.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler libopenblas-dev
      libcmocka-dev zlib1g-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libtiff-dev
      libopenjp2-7-dev libonnx-dev libonnx-testdata dataset-fashion-mnist)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
