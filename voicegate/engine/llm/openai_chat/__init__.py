"""An OpenAI-compatible Chat Completions client behind the LLM port (streaming, tool calls).

``request`` builds the request body, ``sse`` cuts the server-sent event stream into data
payloads, ``deltas`` turns chunk payloads into text deltas and assembled tool calls, and
``client`` does the HTTP (aiohttp) and owns the connection's lifetime.
"""

from voicegate.engine.llm.openai_chat.client import OpenAIChatLLM

__all__ = ["OpenAIChatLLM"]
