// A stdio MCP server built on the official SDK (its task store, its tasks/get and tasks/result
// handlers), whose write tool `refund` always runs as a task that fails on its own: the payment
// system declines, the task's status becomes `failed`, and its tasks/result is the tool's error
// (`isError: true`). TASK_RESULTS_FILE, when set, counts the tasks/result requests it served.
import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import { z } from 'zod';

/** The SDK's store, counting the results it hands out (its tasks/result handler reads them here). */
class CountingStore extends InMemoryTaskStore {
  override async getTaskResult(taskId: string, sessionId?: string) {
    if (process.env.TASK_RESULTS_FILE) appendFileSync(process.env.TASK_RESULTS_FILE, `${taskId}\n`);
    return super.getTaskResult(taskId, sessionId);
  }
}

const server = new McpServer(
  { name: 'failing-tasks', version: '1' },
  { capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore: new CountingStore() },
);

server.experimental.tasks.registerToolTask(
  'refund',
  { description: 'refund an order (declined after a moment)', inputSchema: { order: z.string() }, execution: { taskSupport: 'required' } },
  {
    createTask: async ({ order }, extra) => {
      const task = await extra.taskStore.createTask({ ttl: 60_000, pollInterval: 50 });
      setTimeout(() => {
        const declined = { content: [{ type: 'text' as const, text: `refund of ${order} declined` }], isError: true };
        void extra.taskStore.storeTaskResult(task.taskId, 'failed', declined);
      }, 150);
      return { task };
    },
    getTask: async (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) => extra.taskStore.getTaskResult(extra.taskId) as never,
  },
);

await server.connect(new StdioServerTransport());
