"""A voice bot with its own dialogue logic: no agent project, no skills, one async function."""

import asyncio
from collections.abc import AsyncIterator

import voicegate

PRICES = {"coffee": 3, "tea": 2, "cake": 4}


async def reply(text: str, call: voicegate.Conversation) -> AsyncIterator[str]:
    """Answer one thing the caller said, sentence by sentence (each is spoken at once)."""
    order = call.state.setdefault("order", [])
    wanted = [item for item in PRICES if item in text.lower()]
    if wanted:
        order.extend(wanted)
        yield f"One {' and one '.join(wanted)}, noted."
        await asyncio.sleep(0.2)  # a barge-in cancels the turn right here (CancelledError)
        yield f"That is {sum(PRICES[i] for i in order)} dollars so far."
    elif "that's all" in text.lower() or "goodbye" in text.lower():
        yield "Thank you, goodbye!"
    else:
        yield "We have coffee, tea and cake. What would you like?"


async def main() -> None:
    """Serve Twilio and browser calls on http://127.0.0.1:8080 until Ctrl-C."""
    async with voicegate.open_gateway(voicegate.load_settings(), engine=reply) as gateway:
        print(f"listening on {gateway.base_url} (open it in a browser to talk)")
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
