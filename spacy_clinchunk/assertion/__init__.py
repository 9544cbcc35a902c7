"""Assertion machinery: ConText rules, cue matching and scopes, sections and the layout of a note."""
