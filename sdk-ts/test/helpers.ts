/** What every test file shares: the live server (LOOM_BASE_URL) and fresh names. */
import { randomUUID } from "node:crypto";

export const BASE_URL = process.env.LOOM_BASE_URL ?? "http://localhost:7777";

/** A namespace no other test (or earlier run on the same database) has touched. */
export const fresh = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;
