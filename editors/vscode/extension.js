// Starts `policylang lsp` (over stdio) for .sched files; everything else is the server's.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("policylang");
  const [command, ...args] = config.get("server.command", ["policylang", "lsp"]);
  const serverOptions = { command, args, transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "sched" },
      { scheme: "untitled", language: "sched" },
    ],
    // Settings changes reach the server (workspace/didChangeConfiguration), which re-reads
    // policylang.cluster and refreshes the code lenses.
    synchronize: { configurationSection: "policylang" },
    initializationOptions: { policylang: { cluster: config.get("cluster") } },
  };
  client = new LanguageClient("policylang", "policylang", serverOptions, clientOptions);
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
