"""The language server (`policylang lsp`): check, lint, format and eval, in an editor.

    analysis.py    one document parsed, loaded, checked and linted: its problems
    locate.py      the syntax nodes at a position
    modules.py     what a document reaches (imports, uses, the stdlib's plugins), doc comments
    hover.py       hover text          definition.py   go to definition
    completion.py  completion items    symbols.py      the outline
    actions.py     lint's certain fixes as code actions
    evaluate.py    the "evaluate on …" code lens
    server.py      pygls wiring: LSP types in and out, debouncing, the worker thread

Only server.py knows LSP (and imports pygls): the feature modules take and give 1-based lines
and columns and plain attrs data, so they are tested without a protocol too.
"""
