// A TypeScript SDK v2 MCP server for the interop tests: one `echo` tool.
// Usage: node ts_server.mjs stdio|http [serve|reject] [port]
// HTTP listens on 127.0.0.1 only and prints "listening <port>" on stderr once it does.
import http from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const [mode = 'stdio', legacy = 'serve', port = '0'] = process.argv.slice(2);

function factory() {
    const server = new McpServer({ name: 'ts-interop', version: '2.4.0' }, { capabilities: { tools: {} } });
    server.registerTool(
        'echo',
        {
            description: 'Echoes the message',
            inputSchema: fromJsonSchema({
                type: 'object',
                properties: { message: { type: 'string' } },
                required: ['message'],
            }),
        },
        async ({ message }) => ({ content: [{ type: 'text', text: message }] }),
    );
    return server;
}

if (mode === 'stdio') {
    serveStdio(factory, { legacy });
} else {
    const handler = createMcpHandler(factory, { legacy: legacy === 'reject' ? 'reject' : 'stateless' });
    const server = http.createServer(async (req, res) => {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const body = Buffer.concat(chunks);
        const headers = new Headers();
        for (const [k, v] of Object.entries(req.headers)) {
            if (typeof v === 'string') headers.set(k, v);
        }
        const request = new Request(`http://${req.headers.host}${req.url}`, {
            method: req.method,
            headers,
            body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
        });
        const response = await handler.fetch(request);
        res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
        if (response.body) {
            for await (const chunk of response.body) res.write(chunk);
        }
        res.end();
    });
    server.listen(Number(port), '127.0.0.1', () => {
        console.error(`listening ${server.address().port}`);
    });
}
