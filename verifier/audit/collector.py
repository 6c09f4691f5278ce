"""Turns AST nodes into findings with exact 1-based character ranges, and builds machine-applicable fixes."""

from __future__ import annotations

import ast

from verifier.findings import Finding
from verifier.rules import RULES


class Collector:
    """Gathers findings for one file; converts the AST's UTF-8 byte columns into character columns."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.findings: list[Finding] = []
        self._seen: set[Finding] = set()

    def add(self, rule: str, node: ast.AST, message: str, fix: dict | None = None, severity: str | None = None) -> None:
        line, column, end_line, end_column = self.span(node)
        finding = Finding(rule, severity or RULES[rule].severity, message, line, column, end_line, end_column, fix)
        if finding not in self._seen:
            self._seen.add(finding)
            self.findings.append(finding)

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        line = getattr(node, "lineno", 1)
        end_line = getattr(node, "end_lineno", None) or line
        column = self.character(line, getattr(node, "col_offset", 0)) + 1
        end_offset = getattr(node, "end_col_offset", None)
        end_column = self.character(end_line, end_offset) + 1 if end_offset is not None else column
        return line, column, end_line, end_column

    def character(self, line: int, byte_offset: int) -> int:
        """The character index of a UTF-8 byte offset within a 1-based line."""
        if not 1 <= line <= len(self.lines):
            return byte_offset
        return len(self.lines[line - 1].encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))

    def insert(self, message: str, line: int, byte_offset: int, text: str) -> dict:
        """A fix that inserts `text` at a position given as (1-based line, UTF-8 byte offset)."""
        column = self.character(line, byte_offset) + 1
        return fix(message, [edit(line, column, line, column, text)])

    def replace(self, message: str, node: ast.AST, text: str) -> dict:
        line, column, end_line, end_column = self.span(node)
        return fix(message, [edit(line, column, end_line, end_column, text)])

    def source_of(self, node: ast.AST) -> str:
        """The exact source text of a node."""
        line, column, end_line, end_column = self.span(node)
        if line == end_line:
            return self.lines[line - 1][column - 1 : end_column - 1]
        parts = [self.lines[line - 1][column - 1 :], *self.lines[line : end_line - 1]]
        return "\n".join([*parts, self.lines[end_line - 1][: end_column - 1]])


def edit(line: int, column: int, end_line: int, end_column: int, text: str) -> dict:
    """Replace the characters from (line, column) up to, not including, (end_line, end_column) with text."""
    return {"line": line, "column": column, "end_line": end_line, "end_column": end_column, "text": text}


def fix(message: str, edits: list[dict]) -> dict:
    return {"message": message, "edits": edits}
