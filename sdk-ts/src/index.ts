/** The TypeScript SDK of Loom, the memory service for AI agents. */
export {
  Agent,
  Briefs,
  Conversations,
  EXTRACTION_MESSAGE_CHARS,
  EXTRACTION_MESSAGES_MAX,
  Knowledge,
  Memory,
  Session,
} from "./client.js";
export type { AgentOptions, OpFields, OpInput, OpName, OpResult, Turn } from "./client.js";
export * from "./errors.js";
export { OPS } from "./generated/ops.js";
export type { components, operations, paths } from "./generated/schema.js";
