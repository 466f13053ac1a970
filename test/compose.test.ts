/**
 * docker-compose.yml and the Dockerfile are never started here (no Docker engine on our machines), so this
 * checks that they agree with the code: image versions with TEMPORAL_VERSIONS, the schema job with the schema
 * versions of that server release, environment variables with what src/config.ts reads, commands with
 * package.json, and the start order (schema, server, namespace, then api and worker). Pure: files only.
 * Every check returns a problem string; the last tests break a copy of each file to show the checks can fail.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../src/config';
import { TEMPORAL_VERSIONS } from '../ops/temporalVersions';

const REPO = path.resolve(__dirname, '..');
const read = (file: string) => fs.readFileSync(path.join(REPO, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  entrypoint?: string[] | string;
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  healthcheck?: { test: string[] };
  volumes?: string[];
  ports?: string[];
}
type Compose = { services: Record<string, Service> };

const SCHEMA_DIRS = { temporal: 'temporal', visibility: 'temporal_visibility' } as const;
const textOf = (value: string[] | string | undefined) => (Array.isArray(value) ? value.join(' ') : (value ?? ''));
const scriptOf = (service: Service | undefined) => `${textOf(service?.entrypoint)} ${textOf(service?.command)}`;

/** Every `npm run X` in a text whose X package.json does not have. */
function unknownScripts(where: string, text: string, scripts: Record<string, string>): string[] {
  return [...text.matchAll(/npm(?:"\s*,\s*"|\s+)run(?:"\s*,\s*"|\s+)([\w:-]+)/g)]
    .map((match) => match[1]!)
    .filter((script) => !(script in scripts))
    .map((script) => `${where} runs \`npm run ${script}\`, which package.json does not have`);
}

function composeProblems(compose: Compose, files: { initSql: string; scripts: Record<string, string> }): string[] {
  const problems: string[] = [];
  const problem = (ok: boolean, message: string) => {
    if (!ok) problems.push(message);
  };
  const services = compose.services;
  const service = (name: string): Service => services[name] ?? {};
  const dependsOn = (name: string, on: string, condition: string) =>
    problem(service(name).depends_on?.[on]?.condition === condition, `${name} must depend on ${on} with condition ${condition}`);

  problem(
    JSON.stringify(Object.keys(services).sort()) ===
      JSON.stringify(['api', 'postgres', 'temporal', 'temporal-namespace', 'temporal-schema', 'temporal-ui', 'worker']),
    `services are ${Object.keys(services).sort().join(', ')}`,
  );

  // Images: the releases of ops/temporalVersions.ts; admin-tools tags start with the server release.
  const { server, ui, postgresSchema } = TEMPORAL_VERSIONS;
  problem(service('temporal').image === `temporalio/server:${server}`, `temporal runs ${service('temporal').image}, not server ${server}`);
  problem(service('temporal-ui').image === `temporalio/ui:${ui}`, `temporal-ui runs ${service('temporal-ui').image}, not ui ${ui}`);
  for (const job of ['temporal-schema', 'temporal-namespace']) {
    const tag = /^temporalio\/admin-tools:(.+)$/.exec(service(job).image ?? '')?.[1];
    problem(
      tag === server || tag?.startsWith(`${server}-`) === true,
      `${job} runs ${service(job).image}, not admin-tools of server ${server}`,
    );
  }
  for (const [name, { image }] of Object.entries(services)) {
    problem(!image?.includes('auto-setup'), `${name} runs the deprecated ${image}`);
  }

  // The schema job: both databases created, versioned, and updated to exactly the release's schema versions.
  const schema = scriptOf(services['temporal-schema']);
  problem(service('temporal-schema').environment?.SQL_PLUGIN === 'postgres12', 'temporal-schema must use the postgres12 SQL plugin');
  for (const [kind, db] of Object.entries(SCHEMA_DIRS) as Array<[keyof typeof SCHEMA_DIRS, string]>) {
    problem(new RegExp(`--db ${db} create\\b`).test(schema), `temporal-schema does not create the ${db} database`);
    problem(new RegExp(`--db ${db} setup-schema -v 0\\.0\\b`).test(schema), `temporal-schema does not set up versioning in ${db}`);
    const updates = [
      ...schema.matchAll(new RegExp(`--db ${db} update-schema -d /etc/temporal/schema/postgresql/v12/(\\w+)/versioned -v ([\\d.]+)`, 'g')),
    ];
    const found = updates.map((match) => `${match[1]} ${match[2]}`);
    problem(
      JSON.stringify(found) === JSON.stringify([`${kind} ${postgresSchema[kind]}`]),
      `temporal-schema updates ${db} to [${found.join(', ')}], not ${kind} ${postgresSchema[kind]} (TEMPORAL_VERSIONS.postgresSchema)`,
    );
  }
  dependsOn('temporal-schema', 'postgres', 'service_healthy');

  // The server: on Postgres, after the schema job, with a healthcheck the later services wait for.
  const temporalEnv = service('temporal').environment ?? {};
  problem(
    temporalEnv.DB === 'postgres12' && temporalEnv.POSTGRES_SEEDS === 'postgres',
    'temporal must persist to the postgres service (DB=postgres12)',
  );
  problem(
    Number(temporalEnv.NUM_HISTORY_SHARDS) === loadConfig({}).TEMPORAL_HISTORY_SHARDS,
    `temporal has NUM_HISTORY_SHARDS=${temporalEnv.NUM_HISTORY_SHARDS}, not TEMPORAL_HISTORY_SHARDS's default`,
  );
  dependsOn('temporal', 'temporal-schema', 'service_completed_successfully');
  for (const name of ['postgres', 'temporal']) problem((service(name).healthcheck?.test.length ?? 0) > 0, `${name} has no healthcheck`);
  dependsOn('temporal-namespace', 'temporal', 'service_healthy');
  dependsOn('temporal-ui', 'temporal', 'service_healthy');
  problem(service('temporal-ui').environment?.TEMPORAL_ADDRESS === 'temporal:7233', 'temporal-ui must reach temporal:7233');

  // The ledger database: created by the init script that the postgres service mounts.
  problem(
    (service('postgres').volumes ?? []).some((volume) => volume.startsWith('./docker/postgres-init.sql:/docker-entrypoint-initdb.d/')),
    'postgres must run docker/postgres-init.sql at initialization',
  );

  // api and worker: the commands of package.json, settings src/config.ts reads, started once Temporal is ready.
  const namespaces = new Set<string>();
  for (const name of ['api', 'worker']) {
    const { command, restart, build } = service(name);
    const environment = service(name).environment ?? {};
    problem(build !== undefined, `${name} must be built from the Dockerfile`);
    problem(
      JSON.stringify(command) === JSON.stringify(['npm', 'run', name]),
      `${name} runs ${JSON.stringify(command)}, not npm run ${name}`,
    );
    problem(restart === 'unless-stopped', `${name} has restart: ${restart}, not unless-stopped`);
    dependsOn(name, 'postgres', 'service_healthy');
    dependsOn(name, 'temporal', 'service_healthy');
    dependsOn(name, 'temporal-namespace', 'service_completed_successfully');
    for (const key of Object.keys(environment)) {
      problem((CONFIG_KEYS as readonly string[]).includes(key), `${name} sets ${key}, which src/config.ts does not read`);
    }
    try {
      const config = loadConfig(environment);
      const database = new URL(config.DATABASE_URL ?? '');
      problem(database.host === 'postgres:5432', `${name} reaches Postgres at ${database.host}, not postgres:5432`);
      const dbName = database.pathname.slice(1);
      problem(
        new RegExp(`CREATE DATABASE "?${dbName}"?\\s*;`, 'i').test(files.initSql),
        `docker/postgres-init.sql does not create ${dbName}`,
      );
      problem(config.TEMPORAL_ADDRESS === 'temporal:7233', `${name} reaches Temporal at ${config.TEMPORAL_ADDRESS}, not temporal:7233`);
      namespaces.add(config.TEMPORAL_NAMESPACE);
      if (name === 'api') {
        problem(config.HOST === '0.0.0.0', 'api must listen on 0.0.0.0 to be reached from outside its container');
        problem(
          (service(name).ports ?? []).some((port) => port.endsWith(`:${config.PORT}`)),
          `api publishes no port mapped to PORT ${config.PORT}`,
        );
      } else {
        const check = textOf(service(name).healthcheck?.test);
        problem(check.includes(`:${config.WORKER_METRICS_PORT}/metrics`), `worker healthcheck (${check}) is not on WORKER_METRICS_PORT`);
      }
    } catch (error) {
      problems.push(`${name}'s environment is not a valid configuration: ${(error as Error).message}`);
    }
  }
  const namespaceScript = scriptOf(services['temporal-namespace']);
  for (const namespace of namespaces) {
    problem(
      namespaceScript.includes(`namespace create --namespace ${namespace}`),
      `temporal-namespace does not register ${namespace}, the TEMPORAL_NAMESPACE of api/worker`,
    );
  }
  problems.push(...unknownScripts('docker-compose.yml', JSON.stringify(compose), files.scripts));
  return problems;
}

/** The Dockerfile's instructions, continuation lines joined and comments dropped: [keyword, arguments]. */
function instructionsOf(dockerfile: string): Array<[string, string]> {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return [keyword!.toUpperCase(), rest.join(' ')];
    });
}

function dockerfileProblems(dockerfile: string, files: { dockerignore: string; scripts: Record<string, string> }): string[] {
  const problems: string[] = [];
  const problem = (ok: boolean, message: string) => {
    if (!ok) problems.push(message);
  };
  const instructions = instructionsOf(dockerfile);
  const all = (keyword: string) => instructions.filter(([key]) => key === keyword).map(([, args]) => args);

  const user = all('USER').at(-1);
  problem(user !== undefined && !/^(root|0)(:|$)/.test(user), `the image runs as ${user ?? 'root (no USER)'}`);
  const installs = all('RUN').filter((run) => /\bnpm (ci|install|i)\b/.test(run));
  problem(installs.length > 0, 'the image installs no dependencies');
  for (const install of installs) problem(/--omit[= ]dev\b/.test(install), `\`${install}\` installs devDependencies`);
  const healthcheck = all('HEALTHCHECK').at(-1) ?? '';
  problem(/\/readyz\b/.test(healthcheck), `the HEALTHCHECK (${healthcheck || 'none'}) does not ask /readyz`);

  // What the processes load at run time is copied in, exists, and is not left out of the build context.
  const ignored = files.dockerignore
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const copied = all('COPY').flatMap((args) =>
    args
      .split(/\s+/)
      .filter((arg) => !arg.startsWith('--'))
      .slice(0, -1),
  );
  for (const needed of ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'workflows', 'activities', 'ops', 'migrations']) {
    problem(copied.includes(needed), `the image lacks ${needed}`);
  }
  for (const source of copied) {
    problem(fs.existsSync(path.join(REPO, source)), `COPY ${source}: no such file in the repository`);
    problem(!ignored.includes(source.split('/')[0]!), `COPY ${source}: .dockerignore leaves it out of the build context`);
  }
  const script = /docker\/healthcheck\.js/.test(healthcheck);
  problem(!script || copied.includes('docker/healthcheck.js'), 'the HEALTHCHECK script is not copied into the image');
  problems.push(...unknownScripts('the Dockerfile', dockerfile, files.scripts));
  return problems;
}

const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
const composeFiles = { initSql: read('docker/postgres-init.sql'), scripts };
const dockerfileFiles = { dockerignore: read('.dockerignore'), scripts };
const compose = () => YAML.parse(read('docker-compose.yml')) as Compose;

describe('docker-compose.yml and the Dockerfile agree with the code', () => {
  test('docker-compose.yml: images, schema job, start order, environment, commands', () => {
    expect(composeProblems(compose(), composeFiles)).toEqual([]);
  });

  test('Dockerfile: non-root, no devDependencies, HEALTHCHECK on /readyz, what the processes load', () => {
    expect(dockerfileProblems(read('Dockerfile'), dockerfileFiles)).toEqual([]);
  });

  test('npm run api and npm run worker start the entry points that wait for Postgres and Temporal', () => {
    expect(scripts.api).toMatch(/ops\/bin\/api\.ts/);
    expect(scripts.worker).toMatch(/ops\/bin\/worker\.ts/);
  });
});

describe('the checks fail on files that disagree with the code', () => {
  const broken = (change: (compose: Compose) => void) => {
    const copy = compose();
    change(copy);
    return composeProblems(copy, composeFiles);
  };

  test.each<[string, (compose: Compose) => void, RegExp]>([
    [
      'another server release',
      (c) => (c.services.temporal!.image = 'temporalio/server:1.28.0'),
      /temporal runs temporalio\/server:1\.28\.0/,
    ],
    ['another UI release', (c) => (c.services['temporal-ui']!.image = 'temporalio/ui:2.34.0'), /temporal-ui runs/],
    [
      'admin-tools of another release',
      (c) => (c.services['temporal-schema']!.image = 'temporalio/admin-tools:1.27'),
      /temporal-schema runs/,
    ],
    ['auto-setup', (c) => (c.services.temporal!.image = 'temporalio/auto-setup:1.29.1'), /deprecated/],
    [
      'an older visibility schema',
      (c) =>
        (c.services['temporal-schema']!.command = textOf(c.services['temporal-schema']!.command).replace(
          'versioned -v 1.9',
          'versioned -v 1.8',
        )),
      /updates temporal_visibility to \[visibility 1\.8\]/,
    ],
    ['a variable config.ts does not read', (c) => (c.services.api!.environment!.TEMPORAL_HOST = 'temporal'), /api sets TEMPORAL_HOST/],
    [
      'an invalid value',
      (c) => (c.services.worker!.environment!.TEMPORAL_ADDRESS = 'temporal'),
      /worker's environment is not a valid configuration/,
    ],
    ['no restart policy', (c) => delete c.services.worker!.restart, /worker has restart: undefined/],
    [
      'a plain depends_on',
      (c) => (c.services.api!.depends_on = { temporal: { condition: 'service_started' } }),
      /api must depend on temporal/,
    ],
    ['a script package.json lacks', (c) => (c.services.api!.command = ['npm', 'run', 'serve']), /npm run serve/],
    ['another namespace', (c) => (c.services.api!.environment!.TEMPORAL_NAMESPACE = 'payments'), /does not register payments/],
  ])('%s', (_name, change, expected) => {
    expect(broken(change)).toContainEqual(expect.stringMatching(expected));
  });

  test.each<[string, (dockerfile: string) => string, RegExp]>([
    ['running as root', (d) => d.replace(/^USER .*$/m, ''), /runs as root/],
    ['devDependencies installed', (d) => d.replace('--omit=dev ', ''), /installs devDependencies/],
    ['no HEALTHCHECK', (d) => d.replace(/^HEALTHCHECK .*$/m, ''), /HEALTHCHECK \(none\)/],
    ['migrations left out', (d) => d.replace(/^COPY migrations .*$/m, ''), /lacks migrations/],
  ])('Dockerfile: %s', (_name, change, expected) => {
    expect(dockerfileProblems(change(read('Dockerfile')), dockerfileFiles)).toContainEqual(expect.stringMatching(expected));
  });
});
