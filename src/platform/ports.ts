import net from 'node:net';
import { StartupError } from './startupError';

/** Resolves when nothing listens on host:port (we could bind it ourselves); false when something does. */
export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' || error.code === 'EACCES' ? resolve(false) : reject(error),
    );
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * Refuses to start `component` on a port something else holds, naming the port and the setting that moves
 * it: a child that finds its port taken dies with a message in its own log, far from the operator's eyes.
 */
export async function assertPortFree(component: string, port: number, variable: string, host = '127.0.0.1'): Promise<void> {
  if (port === 0 || (await portFree(port, host))) return;
  throw portInUse(component, port, variable, host);
}

export function portInUse(component: string, port: number, variable: string, host = '127.0.0.1'): StartupError {
  return new StartupError(
    `${component}: port ${port} (${variable}) is already in use on ${host}. Stop what listens there, or set ${variable} to a free port.`,
  );
}
