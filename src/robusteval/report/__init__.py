"""Rendering results for people: terminal tables now; HTML and Markdown reports later."""
