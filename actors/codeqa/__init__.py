"""Seed 003's code-question assistant: the Orchestrator (the ReAct agent with its own prompt)
and five tools over a folder of repositories, including HyDE semantic file search."""
