"""How long loading an agent project takes (issue 5: "well under a second" for 50 skills).

Writes a synthetic project of ``--skills`` skills into a temporary folder. Every skill has a
skill.md with prose, an ``if:`` paragraph, ``@memory``/``@block`` tokens, tool constraints
and an ordered block; a memory.yml, a responses.yml with conditioned variants and buttons, a
tools.py with three tools, and a references/ folder of ``--reference-kb`` kilobytes of text. The
project also has shared tools imported by every skill and root references. The whole project
is then loaded (parse, tool import, validation, chunking, BM25 index) ``--runs`` times.

    python bench/project_load.py [--skills 50] [--runs 5] [--reference-kb 4]

Prints one JSON object with the median and the slowest load in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from voicegate.engine.project.loader import load_project

WORDS = [
    "card",
    "payment",
    "travel",
    "notice",
    "lock",
    "replace",
    "balance",
    "account",
    "fee",
    "shipping",
    "branch",
    "phone",
]

SKILL_MD = """---
name: Skill {n}
description: Handles requests of kind {n} (cards, fees, travel).
requires: session.project.authenticated
import_tools: [lookup_customer]
tool_constraints:
  - act_{n}:
      requires: session.skill_{n}.choice
      requires_confirmation: {{enabled: true, utter_for_confirmation: utter_confirm_{n}}}
      on_success: utter_done_{n}
---
Help with request {n}. Greet @memory.project.name and, once ready, invoke @block.flow.

if: session.skill_{n}.choice == "a" or session.skill_{n}.choice == "b"
Use choice @memory.skill_{n}.choice and call act_{n}.

:::ordered_block id=flow
steps:
  - id: ask
    collect: choice
    utterance: utter_ask_{n}
  - id: fetch
    execute_tool: fetch_{n}
  - id: route
    noop: true
    next:
      - if: session.skill_{n}.choice == "a"
        then: done
      - else: END
  - id: done
    action: utter_done_{n}
:::
"""

MEMORY_YML = """schema:
  public:
    choice:
      type: categorical
      enum_values: [a, b, c]
  private:
    details:
      type: json
"""

RESPONSES_YML = """responses:
  utter_ask_{n}:
    - text: Which option, {{name}}?
      buttons:
        - {{title: A, payload: "set:session.skill_{n}.choice=a"}}
        - {{title: B, payload: "set:session.skill_{n}.choice=b"}}
  utter_confirm_{n}:
    - text: Go ahead with {{session.skill_{n}.choice}}?
  utter_done_{n}:
    - text: Done with a.
      condition: session.skill_{n}.choice == "a"
    - text: Done.
"""

TOOLS_PY = """from rasa.mantle.tools.decorator import ToolContext, tool
from rasa.mantle.tools.result import ToolResult


@tool(description="Act on the choice")
async def act_{n}(context: ToolContext = None) -> ToolResult:
    context.memory.set("details", {{"acted": True}})
    return ToolResult()


@tool(description="Fetch details")
async def fetch_{n}(context: ToolContext = None) -> ToolResult:
    context.memory.set("details", {{"fetched": True}})
    return ToolResult()


@tool(description="Explain the options")
async def explain_{n}(topic: str, verbose: bool = False, context: ToolContext = None) -> ToolResult:
    return ToolResult(llm_response={{"topic": topic}})
"""


def reference_text(kilobytes: int, seed: int) -> str:
    """Deterministic prose of about ``kilobytes`` KB."""
    words = [WORDS[(seed * 7 + index * 3) % len(WORDS)] for index in range(kilobytes * 160)]
    return " ".join(words) + "\n"


def write_project(root: Path, skills: int, reference_kb: int) -> None:
    """A synthetic project with ``skills`` skills under ``root``."""
    files = {
        "agent.yml": "agent:\n  persona: Bench agent.\n",
        "memory.yml": "authenticated:\n  type: bool\nname:\n  type: text\n",
        "tools/customers.py": TOOLS_PY.split("\n\n\n")[0]
        + '\n\n\n@tool(description="Look up the customer")\n'
        "async def lookup_customer(context: ToolContext = None) -> ToolResult:\n"
        "    return ToolResult()\n",
        "references/global.md": reference_text(reference_kb, 0),
    }
    for n in range(skills):
        folder = f"skills/skill_{n}"
        files[f"{folder}/skill.md"] = SKILL_MD.format(n=n)
        files[f"{folder}/memory.yml"] = MEMORY_YML
        files[f"{folder}/responses.yml"] = RESPONSES_YML.format(n=n)
        files[f"{folder}/tools.py"] = TOOLS_PY.format(n=n)
        files[f"{folder}/references/notes.md"] = reference_text(reference_kb, n + 1)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def main() -> None:
    """Measure and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skills", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference-kb", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_project(root, args.skills, args.reference_kb)
        durations = []
        for _ in range(args.runs):
            started = time.perf_counter()
            project = load_project(root)
            durations.append((time.perf_counter() - started) * 1000)
    chunks = len(project.references.chunks) if project.references else 0
    print(
        json.dumps(
            {
                "skills": len(project.skills),
                "tools": sum(len(skill.toolset) for skill in project.skills.values()),
                "responses": len(project.responses),
                "reference_chunks": chunks,
                "runs": args.runs,
                "median_ms": round(statistics.median(durations), 1),
                "max_ms": round(max(durations), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
