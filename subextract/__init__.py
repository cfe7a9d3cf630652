"""subextract: extract hardcoded (burned-in) subtitles from videos.

>>> import subextract
>>> result = subextract.extract("talk.mp4", "fast", lang="en")  # doctest: +SKIP
>>> result.save("talk.en.srt")  # doctest: +SKIP
"""

from subextract.errors import SubextractError
from subextract.pipeline.run import ExtractionResult, extract
from subextract.schema import Cue

__all__ = ["Cue", "ExtractionResult", "SubextractError", "extract"]
__version__ = "0.1.0"
