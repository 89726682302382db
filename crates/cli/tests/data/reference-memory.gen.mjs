// Writes a memory.jsonl exactly as @modelcontextprotocol/server-memory's saveGraph does.
import { writeFileSync } from "node:fs";
const graph = {
  entities: [
    { name: "Alice", entityType: "person", observations: ["likes Rust", "said \"hi\"\tthen left", "café ☕ 日本", "path C:\\tmp\\x", "line1\nline2"] },
    { name: "mnemon", entityType: "project", observations: [] },
    { name: "Bob </script>", entityType: "person", observations: ["control \u0001 char", "emoji 🦀"] },
  ],
  relations: [
    { from: "Alice", to: "mnemon", relationType: "works_on" },
    { from: "Bob </script>", to: "Alice", relationType: "knows" },
  ],
};
const lines = [
  ...graph.entities.map(e => JSON.stringify({ type: "entity", name: e.name, entityType: e.entityType, observations: e.observations })),
  ...graph.relations.map(r => JSON.stringify({ type: "relation", from: r.from, to: r.to, relationType: r.relationType })),
];
writeFileSync(process.argv[2], lines.join("\n"));
