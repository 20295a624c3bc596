// A small JSON Schema (2020-12 subset) validator for docs/host-protocol.schema.json, and a checker
// that validates every message of a connection against the method table. Only the keywords the
// generated schema uses are implemented; an unknown keyword fails loudly so the subset cannot
// silently stop checking when the schema grows.

import { readFileSync } from "node:fs";

const KNOWN = new Set([
  "$ref", "$schema", "type", "properties", "required", "additionalProperties", "items", "anyOf", "oneOf",
  "const", "enum", "minimum", "format", "default", "description", "title",
]);

/** Loads the schema file. */
export function loadSchema(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** The errors of `value` against `schema` (empty = valid); `root` resolves `#/$defs/…`. */
export function validate(value, schema, root, path = "$") {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${path}: no value is allowed here`];
  const errors = [];
  for (const key of Object.keys(schema)) {
    if (!KNOWN.has(key)) errors.push(`${path}: the validator does not implement keyword ${key}`);
  }
  if (schema.$ref) {
    const name = schema.$ref.replace(/^#\/\$defs\//, "");
    const target = root.$defs?.[name];
    if (!target) return [`${path}: unresolved $ref ${schema.$ref}`];
    errors.push(...validate(value, target, root, path));
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => hasType(value, t))) {
      return [...errors, `${path}: expected ${types.join("|")}, got ${JSON.stringify(value)?.slice(0, 80)}`];
    }
  }
  if (schema.const !== undefined && JSON.stringify(value) !== JSON.stringify(schema.const)) {
    errors.push(`${path}: expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(value)}`);
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: ${value} < ${schema.minimum}`);
    if (/^u?int/.test(schema.format ?? "") && !Number.isInteger(value)) errors.push(`${path}: not an integer`);
    if (/^uint/.test(schema.format ?? "") && value < 0) errors.push(`${path}: negative ${schema.format}`);
  }
  if (isObject(value)) {
    for (const key of schema.required ?? []) {
      if (!Object.hasOwn(value, key)) errors.push(`${path}: missing required ${key}`);
    }
    const props = schema.properties ?? {};
    for (const [key, child] of Object.entries(value)) {
      if (Object.hasOwn(props, key)) errors.push(...validate(child, props[key], root, `${path}.${key}`));
      else if (schema.additionalProperties !== undefined) {
        errors.push(...validate(child, schema.additionalProperties, root, `${path}.${key}`));
      }
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    value.forEach((item, i) => errors.push(...validate(item, schema.items, root, `${path}[${i}]`)));
  }
  if (schema.anyOf) {
    const results = schema.anyOf.map((s) => validate(value, s, root, path));
    if (!results.some((r) => r.length === 0)) {
      errors.push(`${path}: matches none of anyOf (${results.map((r) => r[0]).join("; ")})`);
    }
  }
  if (schema.oneOf) {
    const results = schema.oneOf.map((s) => validate(value, s, root, path));
    const matching = results.filter((r) => r.length === 0).length;
    if (matching !== 1) {
      errors.push(`${path}: matches ${matching} of oneOf (${results.map((r) => r[0] ?? "ok").join("; ")})`);
    }
  }
  return errors;
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function hasType(value, type) {
  switch (type) {
    case "object":
      return isObject(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    default:
      return false;
  }
}

/**
 * Validates a connection's messages as the plugin's `tap` sees them: `"out"` = plugin → bridge,
 * `"in"` = bridge → plugin. Requests are matched to their answers by id per direction, so each
 * result is checked against its method's result schema. `problems` collects every violation;
 * `counts` how many messages of each method were checked.
 */
export function createProtocolChecker(schema) {
  const problems = [];
  const counts = {};
  // Request ids by sender: an answer travels the other way.
  const sentByHost = new Map();
  const sentByBridge = new Map();
  const methodSchema = (method) => schema.methods?.[method];
  const check = (label, value, sub) => {
    for (const error of validate(value, sub, schema)) problems.push(`${label}: ${error}`);
  };
  const sent = [];
  const tap = (direction, message) => {
    const sender = direction === "out" ? "host" : "bridge";
    if (sender === "host") sent.push(message);
    if (message.jsonrpc !== "2.0") problems.push(`${sender} sent a message without jsonrpc 2.0: ${JSON.stringify(message)}`);
    if (typeof message.method === "string") {
      const info = methodSchema(message.method);
      counts[message.method] = (counts[message.method] ?? 0) + 1;
      if (!info) {
        problems.push(`${sender} sent unknown method ${message.method}`);
        return;
      }
      if (info.sender !== sender) problems.push(`${sender} sent ${message.method}, which only the ${info.sender} sends`);
      const isRequest = Object.hasOwn(message, "id");
      if ((info.kind === "request") !== isRequest) problems.push(`${message.method} sent as the wrong kind`);
      check(`${message.method} params`, message.params ?? {}, info.params);
      if (isRequest) (sender === "host" ? sentByHost : sentByBridge).set(message.id, message.method);
      return;
    }
    const requests = sender === "host" ? sentByBridge : sentByHost;
    const method = requests.get(message.id);
    if (!method) {
      if (!(message.id === null && message.error)) problems.push(`${sender} answered unknown id ${JSON.stringify(message.id)}`);
      return;
    }
    requests.delete(message.id);
    counts[`${method} (answer)`] = (counts[`${method} (answer)`] ?? 0) + 1;
    if (Object.hasOwn(message, "error")) {
      const error = message.error;
      if (!Number.isInteger(error?.code) || typeof error?.message !== "string") {
        problems.push(`${method} error without an integer code and a message: ${JSON.stringify(error)}`);
      }
      const known = schema.errors?.[String(error?.code)];
      if (known?.data && error.data !== undefined) check(`${method} error data`, error.data, known.data);
      return;
    }
    check(`${method} result`, message.result, methodSchema(method).result);
  };
  return { tap, problems, counts, sent, pending: { host: sentByHost, bridge: sentByBridge } };
}
