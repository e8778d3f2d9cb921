"""The forward template (an instruction applied to one input) and the backward template (a meta-prompt
asking the local LM to improve an instruction from a subset's successes and errors).

Why here and fixed: the forward template is what `ppt dp-opt apply` sends to a cloud model, and the
evaluation scores labels under exactly the same text, so both read it from one place.
"""

from __future__ import annotations

FORWARD = "Instruction: {prompt}\n\nInput: {input}\n\nOutput:"

META = (
    "A student is completing a task that requires producing a short output for an input. The student was given "
    "an instruction and made some errors. Write an improved, general instruction for the task that helps the "
    "student answer correctly. Do not copy the inputs."
)

MESSAGES = (
    "Write a better instruction.",
    "Rewrite the instruction so that the student avoids these errors.",
    "Give a clearer and more precise instruction for this task.",
    "Improve the instruction; keep it short and general.",
)


def forward(prompt: str, text: str) -> str:
    """The prompt for one input, up to (not including) the label: labels are scored as ``' ' + label``."""
    return FORWARD.format(prompt=prompt.strip(), input=" ".join(str(text).split()))


def backward(
    instruction: str, successes: list[tuple[str, str]], errors: list[tuple[str, str, str]], message: int = 0
) -> str:
    """The meta-prompt of one subset: ``successes`` are (input, label), ``errors`` (input, predicted, label).

    The instruction is quoted on a line of its own (``> text``, as DLN's backward template does) and the
    meta-prompt ends with an open quote (``# Improved Instruction`` then ``>``), so the first generated
    tokens are the instruction's words. It ended with ``Improved Instruction:`` before: small models then
    started with line breaks and headings (smollm2, 24 subsets: the most likely first token was a line
    break at 0.32 of the votes at temperature 1.1, then "#"), the paper preset's 14 queries went on layout
    tokens and no text was released; with the quote, " Class" had 0.65 and the next four tokens 0.87-1.00.
    """
    parts = [META, "", "# Instruction", f"> {' '.join(instruction.split())}", ""]
    if successes:
        parts.append("# Student successes")
        for x, y in successes:
            parts += [f"Input: {' '.join(x.split())}", f"Correct Output: {y}", ""]
    if errors:
        parts.append("# Student errors")
        for x, p, y in errors:
            parts += [f"Input: {' '.join(x.split())}", f"Student Output: {p}", f"Correct Output: {y}", ""]
    parts += [MESSAGES[message % len(MESSAGES)], "", "# Improved Instruction", ">"]
    return "\n".join(parts)
