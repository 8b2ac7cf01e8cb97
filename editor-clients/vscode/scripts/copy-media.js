// The preview's page is kdd view's page (server/view/static): one front end for the browser and VS Code.
// It is copied into media/ before compiling, so the .vsix carries it.
const fs = require("fs");
const path = require("path");

const from = path.resolve(__dirname, "../../../server/view/static");
const to = path.resolve(__dirname, "../media");
fs.mkdirSync(to, { recursive: true });
for (const name of fs.readdirSync(from)) fs.copyFileSync(path.join(from, name), path.join(to, name));
