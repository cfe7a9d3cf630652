"""Fetches Tesseract's best models (tessdata_best converted to integer) for the languages where
they read better than Debian's fast ones (``scripts.BETTER_MODELS``) into the install's model
folder; ``scripts/setup.sh`` runs it.

    python -m subextract.stages.ocr.tesseract_models [--into DIR] [--registry URL] [MODEL ...]

They come from the npm registry's ``@tesseract.js-data/<model>`` packages (tesseract.js's
repackaging of tessdata: ``4.0.0_best_int/<model>.traineddata.gz``), since the registry is what
these machines, CI and most firewalled users can reach (GitHub's tessdata repositories often are
not). Each tarball is checked against the registry's own record of it (the ``integrity`` SHA-512,
and the ``shasum`` SHA-1) and must come from the registry's host; only the one model file is read
out of it. What fails leaves the folder as it was: the engine then reads with Debian's models.
Standard-library HTTP on purpose: this runs before anything but the package itself is installed.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import io
import json
import logging
import os
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from subextract.errors import SubextractError
from subextract.stages.ocr.scripts import BETTER_MODELS, SOURCES_FILE, install_models_dir

log = logging.getLogger(__name__)

REGISTRY = "https://registry.npmjs.org"
SCOPE = "@tesseract.js-data"
VARIANT = "4.0.0_best_int"
_TIMEOUT_S = 15
# The largest package is under 10 MB and the largest model under 20 MB; anything much bigger is
# not what the registry's record says it is.
_MAX_TARBALL = 64 << 20
_MAX_MODEL = 128 << 20


class RegistryUnreachable(SubextractError):
    """The registry could not be reached (offline, firewalled): not an error of the data."""


@dataclass(frozen=True)
class Release:
    package: str
    version: str
    tarball: str
    integrity: str  # "sha512-<base64>"
    shasum: str | None  # SHA-1, hex


def _get(url: str, limit: int) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:  # noqa: S310 (http(s) only, checked)
            data = response.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise SubextractError(f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise RegistryUnreachable(f"{url}: {getattr(exc, 'reason', exc)}") from None
    if len(data) > limit:
        raise SubextractError(f"{url}: larger than {limit >> 20} MiB, refused")
    return data


def latest_release(model: str, registry: str = REGISTRY) -> Release:
    """The registry's record of the latest ``@tesseract.js-data/<model>``."""
    package = f"{SCOPE}/{model}"
    document = json.loads(_get(f"{registry.rstrip('/')}/{urllib.parse.quote(package, safe='@')}", 4 << 20))
    try:
        version = document["dist-tags"]["latest"]
        dist = document["versions"][version]["dist"]
        return Release(package, version, dist["tarball"], dist["integrity"], dist.get("shasum"))
    except (KeyError, TypeError):
        raise SubextractError(f"{package}: the registry's record has no tarball with an integrity hash") from None


def verified_tarball(release: Release, registry: str = REGISTRY) -> bytes:
    """The release's tarball, refused unless it comes from the registry's own host and matches
    the registry's hashes of it."""
    source, own = urllib.parse.urlsplit(release.tarball), urllib.parse.urlsplit(registry)
    if (source.scheme, source.netloc) != (own.scheme, own.netloc):
        raise SubextractError(f"{release.package}: tarball {release.tarball} is not on {registry}, refused")
    algorithm, _, digest = release.integrity.partition("-")
    if algorithm != "sha512":
        raise SubextractError(f"{release.package}: integrity '{algorithm}' is not SHA-512, refused")
    data = _get(release.tarball, _MAX_TARBALL)
    if base64.b64encode(hashlib.sha512(data).digest()).decode() != digest:
        raise SubextractError(f"{release.package}: tarball does not match the registry's SHA-512, refused")
    if release.shasum and hashlib.sha1(data).hexdigest() != release.shasum.lower():  # noqa: S324 (npm's own field)
        raise SubextractError(f"{release.package}: tarball does not match the registry's SHA-1, refused")
    return data


def model_from_tarball(data: bytes, model: str) -> bytes:
    """``package/4.0.0_best_int/<model>.traineddata.gz`` of the tarball, decompressed; only that
    member is read (no path of the archive is ever written)."""
    member = f"package/{VARIANT}/{model}.traineddata.gz"
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            entry = archive.getmember(member)
            packed = archive.extractfile(entry) if entry.isfile() else None
            if packed is None:
                raise KeyError(member)
            with gzip.GzipFile(fileobj=packed) as unpacked:
                model_bytes = unpacked.read(_MAX_MODEL + 1)
    except KeyError:
        raise SubextractError(f"the tarball has no {member}") from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise SubextractError(f"the tarball's {member} is unreadable ({exc})") from None
    if len(model_bytes) > _MAX_MODEL or not model_bytes:
        raise SubextractError(f"the tarball's {member} is empty or too large, refused")
    return model_bytes


def _sources(folder: Path) -> dict:
    try:
        recorded = json.loads((folder / SOURCES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the model from other users of the install
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def fetch(model: str, folder: Path, registry: str = REGISTRY) -> bool:
    """Puts the best ``model`` into ``folder`` (and records where it came from in sources.json).
    False when the model there is already the registry's latest; raises SubextractError when
    the release is refused, RegistryUnreachable when the registry is out of reach."""
    release = latest_release(model, registry)
    target = folder / f"{model}.traineddata"
    recorded = _sources(folder).get(model, {})
    if target.is_file() and recorded.get("integrity") == release.integrity:
        return False
    data = model_from_tarball(verified_tarball(release, registry), model)
    folder.mkdir(parents=True, exist_ok=True)
    _write_atomically(target, data)
    sources = _sources(folder)
    sources[model] = {"package": release.package, "version": release.version, "variant": VARIANT,
                      "integrity": release.integrity, "sha256": hashlib.sha256(data).hexdigest()}
    _write_atomically(folder / SOURCES_FILE, (json.dumps(sources, indent=2, sort_keys=True) + "\n").encode())
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m subextract.stages.ocr.tesseract_models",
                                     description="Fetch Tesseract's best models where they read better than "
                                                 "Debian's fast ones.")
    parser.add_argument("models", nargs="*", default=list(BETTER_MODELS), metavar="MODEL",
                        help=f"traineddata names (default: {' '.join(BETTER_MODELS)})")
    parser.add_argument("--into", type=Path, default=install_models_dir(),
                        help=f"model folder (default: {install_models_dir()})")
    parser.add_argument("--registry", default=os.environ.get("npm_config_registry") or REGISTRY,
                        help="npm registry (default: $npm_config_registry or %(default)s)")
    args = parser.parse_args(argv)
    if urllib.parse.urlsplit(args.registry).scheme not in ("https", "http"):
        print(f"subextract: --registry {args.registry}: not an http(s) URL", file=sys.stderr)
        return 2
    failed = 0
    for model in args.models:
        try:
            if fetch(model, args.into, args.registry):
                print(f"subextract: Tesseract's best '{model}' model installed in {args.into}")
        except RegistryUnreachable as exc:
            # Offline or firewalled: Debian's models read; nothing to warn about per model.
            print(f"subextract: {args.registry} not reachable ({exc}); Debian's Tesseract models are used",
                  file=sys.stderr)
            return 3
        except SubextractError as exc:
            print(f"subextract: best '{model}' model not installed: {exc}", file=sys.stderr)
            failed += 1
        except OSError as exc:  # the folder cannot be written (a system-wide install, not root)
            print(f"subextract: cannot write Tesseract's models into {args.into} ({exc.strerror}); "
                  f"Debian's are used", file=sys.stderr)
            return 3
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
