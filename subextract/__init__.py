"""subextract: extract hardcoded (burned-in) subtitles from videos."""

from subextract.errors import SubextractError
from subextract.pipeline.run import ExtractionResult, extract

__all__ = ["ExtractionResult", "SubextractError", "extract"]
__version__ = "0.1.0"
