"""Results → what people and machines read: eval's, explain's and simulate's text and JSON
(decisions.py), whatif's (whatif.py), the self-contained HTML page of any of them (html.py), and
the JSON schemas of those documents (schemas/). Who may import it: tests/test_imports.py."""
