// Compiles every tool schema of a GET /v1/tools?format=openai&strict=true
// answer (read from stdin) with Ajv in strict mode, then checks instances.
// Usage: node ajv_strict.js <path of the ajv package> <instances.json>
"use strict";
const fs = require("fs");
const Ajv = require(process.argv[2]);
const ajv = new (Ajv.default || Ajv)({ strict: true, allErrors: true });
// Control: strict mode is on, so the old decimal shape (a type union) is refused.
let refused = false;
try {
  ajv.compile({ type: "object", properties: { amount: { type: ["string", "number"] } } });
} catch (e) {
  refused = true;
}
if (!refused) {
  console.error("Ajv compiled a type union: strict mode is not on");
  process.exit(1);
}
const defs = JSON.parse(fs.readFileSync(0, "utf8"));
const cases = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const byName = {};
for (const d of defs) {
  byName[d.function.name] = ajv.compile(d.function.parameters); // throws in strict mode on any violation
}
let failed = 0;
for (const c of cases) {
  const ok = byName[c.tool](c.args);
  if (ok !== c.ok) {
    failed++;
    console.error(`${c.tool} ${JSON.stringify(c.args)}: want ${c.ok}, got ${ok}`, JSON.stringify(byName[c.tool].errors));
  }
}
console.log(`${Object.keys(byName).length} schemas compiled in strict mode, ${cases.length - failed} of ${cases.length} instances as expected`);
process.exit(failed ? 1 : 0);
