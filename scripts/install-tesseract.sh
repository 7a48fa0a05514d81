#!/usr/bin/env bash
# Tesseract reads scans and pictures at ingest (pipeline/parse/ocr.py): Debian's tesseract-ocr with the English,
# simplified Chinese and orientation data. Installs them with apt when missing and we are root, as chromium is.
set -euo pipefail
if command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -qx chi_sim \
    && tesseract --list-langs 2>/dev/null | grep -qx eng; then
  exit 0
fi
PKGS="tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian's Tesseract for OCR (apt-get install $PKGS)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends $PKGS >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends $PKGS >/dev/null; }
else
  echo "note: scans and pictures need Tesseract: sudo apt-get install -y --no-install-recommends $PKGS" >&2
fi
