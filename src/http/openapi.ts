// GET /v1/openapi.json: the OpenAPI 3.1 document of every route (operations.ts), its schemas converted from
// the same zod schemas the handlers parse and answer with (queues/schemas.ts's converter, the one
// GET /v1/schemas uses). Generated once per process: nothing in it depends on a request.
import { PROBLEM_CONTENT_TYPE, PROBLEM_TYPES } from "./problem.js";
import { ANSWER_COMPONENTS, HEADERS, OPERATIONS, REQUEST_COMPONENTS, type Answer, type ComponentName, type Operation, type Parameter } from "./operations.js";
import { toJsonSchema, toJsonSchemas } from "../../queues/index.js";

type Json = Record<string, unknown>;

const ref = (name: ComponentName): Json => ({ $ref: `#/components/schemas/${name}` });
/** OpenAPI paths name parameters in braces: /v1/jobs/{queue}/{id}. */
export const openApiPath = (expressPath: string) => expressPath.replace(/:([A-Za-z_]+)/g, "{$1}");

function inlineSchema(parameter: Parameter): Json {
  const { $schema: _s, ...schema } = toJsonSchema(parameter.schema, "input");
  return schema;
}

function parameterObject(p: Parameter): Json {
  return { name: p.name, in: p.in, description: p.description, required: p.in === "path" ? true : (p.required ?? false), schema: inlineSchema(p) };
}

function responseObject(answer: Answer): Json {
  const content: Json = {};
  if (answer.json !== undefined) content["application/json"] = { schema: ref(answer.json) };
  if (answer.problems !== undefined) content[PROBLEM_CONTENT_TYPE] = { schema: ref("Problem") };
  for (const [type, media] of Object.entries(answer.content ?? {})) {
    content[type] = {
      ...(media.schema ? { schema: media.schema } : {}),
      // OpenAPI 3.1 has no word for an event stream's events: an extension names each event's data.
      ...(media.events
        ? {
            "x-events": Object.fromEntries(
              Object.entries(media.events).map(([event, data]) => [event, data === "line" ? { type: "string", description: "One log line" } : ref(data)]),
            ),
          }
        : {}),
    };
  }
  const problemWords = answer.problems?.length ? ` (error: ${answer.problems.join(", ")})` : "";
  return {
    description: `${answer.description}${problemWords}`,
    ...(answer.headers?.length ? { headers: Object.fromEntries(answer.headers.map((h) => [h, { $ref: `#/components/headers/${h}` }])) } : {}),
    ...(Object.keys(content).length > 0 ? { content } : {}),
  };
}

/** Answers every operation of an access class can get besides its own. */
function commonAnswers(op: Operation): Record<number, Answer> {
  const out: Record<number, Answer> = {
    421: { description: "The Host header names no host this server serves (DNS-rebinding guard)", problems: ["host_not_allowed"] },
  };
  if (op.access === "viewer" || op.access === "admin") {
    out[401] = { description: "No token, or not one of this server's (with SCQ_API_TOKEN set)", problems: ["unauthorized"], headers: ["WWW-Authenticate"] };
  }
  if (op.access === "admin")
    out[403] = { description: "The viewer token may only read; a cookie-carried write from another origin", problems: ["forbidden", "cross_site_write"] };
  if (op.path.startsWith("/v1/")) {
    out[500] = { description: "The request could not be handled", problems: ["internal_error"] };
    out[503] ??= { description: "Redis cannot be reached: nothing was done; retry (with the same Idempotency-Key)", problems: ["redis_unavailable"] };
  }
  return out;
}

function operationObject(op: Operation): Json {
  const answers = { ...commonAnswers(op), ...op.answers };
  const access = { anyone: "Anyone.", viewer: "The viewer or admin token.", admin: "The admin token (SCQ_API_TOKEN).", telegram: "Telegram's secret header." }[
    op.access
  ];
  let requestBody: Json | undefined;
  if (op.body !== undefined) {
    if ("json" in op.body) requestBody = { required: true, content: { "application/json": { schema: ref(op.body.json) } } };
    else if ("form" in op.body) requestBody = { required: true, content: { "application/x-www-form-urlencoded": { schema: op.body.form } } };
    else requestBody = { required: true, description: "A Telegram Update (Bot API)", content: { "application/json": { schema: { type: "object" } } } };
  }
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: `${op.description ? `${op.description}\n\n` : ""}Who: ${access}`,
    ...(op.access === "anyone" ? { security: [] } : op.access === "telegram" ? { security: [{ telegramSecret: [] }] } : {}),
    ...(op.parameters?.length ? { parameters: op.parameters.map(parameterObject) } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: Object.fromEntries(
      Object.entries(answers)
        .sort(([a], [b]) => Number(a) - Number(b))
        .map(([status, answer]) => [status, responseObject(answer)]),
    ),
  };
}

export function openApiDocument(version: string): Json {
  const paths: Record<string, Json> = {};
  for (const op of OPERATIONS) (paths[openApiPath(op.path)] ??= {})[op.method] = operationObject(op);
  const refOf = (name: string) => `#/components/schemas/${name}`;
  return {
    openapi: "3.1.0",
    info: {
      title: "sandcastle-queue",
      version,
      description: [
        "The durable job queue in front of Sandcastle runs and Margot research intents (docs/contracts.md, HTTP contract).",
        "Every request first passes a Host check (421). With SCQ_API_TOKEN set, everything but /healthz and /login needs a token: the admin token for writes, the viewer token for reads; without it the server binds to loopback only and needs none.",
        "Errors are RFC 9457 problems (application/problem+json) whose `error` names the problem type. A method a path does not take is 405 with Allow.",
      ].join("\n\n"),
      license: { name: "MIT", identifier: "MIT" },
    },
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    security: [{ bearerToken: [] }, { basicToken: [] }, { sessionCookie: [] }],
    paths,
    components: {
      schemas: { ...toJsonSchemas(REQUEST_COMPONENTS, "input", refOf), ...toJsonSchemas(ANSWER_COMPONENTS, "output", refOf) },
      headers: Object.fromEntries(Object.entries(HEADERS).map(([name, description]) => [name, { description, schema: { type: "string" } }])),
      securitySchemes: {
        bearerToken: { type: "http", scheme: "bearer", description: "SCQ_API_TOKEN (admin) or SCQ_VIEWER_TOKEN (viewer)" },
        basicToken: { type: "http", scheme: "basic", description: "Any user name, the token as password" },
        sessionCookie: { type: "apiKey", in: "cookie", name: "scq_session", description: "What POST /login sets (browsers)" },
        telegramSecret: { type: "apiKey", in: "header", name: "X-Telegram-Bot-Api-Secret-Token", description: "TELEGRAM_WEBHOOK_SECRET, sent by Telegram" },
      },
    },
    "x-problem-types": Object.fromEntries(Object.entries(PROBLEM_TYPES).map(([code, t]) => [code, { ...t }])),
  };
}
