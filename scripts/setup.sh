#!/usr/bin/env bash
# Make .venv ready to run subextract and its tests: a virtualenv with the package (editable) and
# pytest. FFmpeg: the system's when present, otherwise the static binary of the imageio-ffmpeg
# wheel (a dependency), so a fresh machine needs nothing but Python 3.10+ and pip.
# Dependencies install at the versions of scripts/constraints.txt (the suite's verified set).
# Re-running is cheap: the install is skipped while pyproject.toml and the constraints are unchanged.
# --test also installs the ray extra (batch --ray's tests), the fonts the tests burn subtitles
# with and Debian's chromium, which the service's page tests drive with Playwright (no browser
# download); --bench the fonts and texts the benchmark's generated sets and the held-out set are
# made from (Debian packages, as root where apt exists; the held-out set's footage is fetched by
# make_samples.py itself with apt-get download into its cache);
# --mutation also installs mutmut for bench/mutation.py.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.subextract-installed
extras=test
if [ "${1:-}" = "--test" ]; then extras=test,ray; fi  # ray: the tests of batch --ray start a local Ray cluster
if [ "${1:-}" = "--mutation" ]; then extras=test,mutation; fi  # bench/mutation.py's mutmut
want="$(cat pyproject.toml scripts/constraints.txt | sha256sum | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c scripts/constraints.txt -e ".[$extras]"
  echo "$want" > "$stamp"
fi
.venv/bin/python -c "from subextract.stages.probe import ffmpeg_exe; print('subextract: ffmpeg at', ffmpeg_exe())"
# Tesseract's models for the scripts PP-OCRv6 cannot read (Debian's packages, 1-4 MB each; the
# tests read Cyrillic and Arabic with them): installed where apt can (as root), skipped quietly
# where it cannot (not root, offline). `subextract --list-languages` shows what is installed and
# names the package of any other language.
language_packs="tesseract-ocr-rus tesseract-ocr-ukr tesseract-ocr-kor tesseract-ocr-ara tesseract-ocr-fas
  tesseract-ocr-heb tesseract-ocr-tha tesseract-ocr-hin tesseract-ocr-vie tesseract-ocr-script-grek tesseract-ocr-ell
  tesseract-ocr-script-cyrl"
missing_packs=$(for p in $language_packs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
if [ -n "$missing_packs" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # shellcheck disable=SC2086 # one word per package
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing_packs; } \
    >/dev/null 2>&1 || echo "subextract: could not install Tesseract's language data (offline?); only Chinese, Japanese and Latin scripts will be read" >&2
fi
# Debian's packages hold Tesseract's fast models; the best ones (integer) read Greek, Ukrainian and
# Hindi better (docs/languages.md). Fetched from the npm registry with each tarball
# checked against the registry's hashes, into the virtualenv's share/ (never the git tree); where
# the registry is out of reach the engine reads with Debian's, and this says so in one line.
.venv/bin/python -m subextract.stages.ocr.tesseract_models --into .venv/share/subextract/tessdata || true
# --test: the tests burn subtitles with libass and need a Latin and a CJK font, and draw thin
# Arabic strokes in Noto Naskh Arabic and an italic serif in Noto Serif Italic (fonts-noto-core);
# without them those tests would only skip. Debian's packages are installed when missing (as
# root, where apt exists). The page tests show Thai cues too (fonts-thai-tlwg-ttf; DejaVu covers Arabic).
if [ "${1:-}" = "--test" ] && ! { fc-list :lang=zh 2>/dev/null | grep -q . && fc-list :lang=en 2>/dev/null | grep -q . \
                                   && fc-list :lang=th 2>/dev/null | grep -q . \
                                   && [ -f /usr/share/fonts/truetype/noto/NotoNaskhArabic-Regular.ttf ]; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fontconfig fonts-dejavu-core fonts-wqy-zenhei \
      fonts-thai-tlwg-ttf fonts-noto-core >/dev/null
  else
    echo "subextract: the subtitle-burning and page tests need fonts: install fonts-dejavu-core, fonts-wqy-zenhei," \
      "fonts-thai-tlwg-ttf and fonts-noto-core" >&2
  fi
fi
# --test: axe-core, the accessibility checker the page tests run inside Chromium, from the npm
# registry (npm checks the tarball against the registry's integrity hash) into the virtualenv.
axe=.venv/share/subextract/axe-core
if [ "${1:-}" = "--test" ] && [ ! -f "$axe/axe.min.js" ]; then
  if ! command -v npm >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null
  fi
  packed=$(mktemp -d)
  if (cd "$packed" && npm pack --silent axe-core@4.10.3 >/dev/null 2>&1); then
    mkdir -p "$axe" && tar -xzf "$packed/axe-core-4.10.3.tgz" -C "$axe" --strip-components=1 package/axe.min.js package/LICENSE
  else
    echo "subextract: could not fetch axe-core from the npm registry; the page's accessibility test will skip" >&2
  fi
  rm -rf "$packed"
fi
# --test: the proofreading page tests drive a real headless Chromium; Playwright (a test extra)
# runs the system's, so nothing is downloaded outside the package registries.
if [ "${1:-}" = "--test" ] && ! command -v chromium >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "subextract: the service's page tests need Chromium: install Debian's chromium package" >&2
  fi
fi
if [ "${1:-}" = "--bench" ]; then
  missing=$(for set in bench scripts heldout; do .venv/bin/python sample_videos/make_samples.py --set $set --missing-packages; done | tr ' ' '\n' | sort -u | tr '\n' ' ' | xargs)
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      # shellcheck disable=SC2086 # one word per package
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    else
      echo "subextract: the benchmark's generated set needs: apt-get install -y $missing" >&2
      exit 1
    fi
  fi
fi
