"""Clients of the language-model servers that stages share: OCR (vision-language models) and
translation (text models) talk to the same kinds of server the same way."""
