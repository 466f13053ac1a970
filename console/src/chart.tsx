import { formatCents } from './format';
import { Money, Table } from './ui';

export interface DayFlow {
  day: string;
  cashIn: number;
  cashOut: number;
  net: number;
}

const WIDTH = 720;
const HEIGHT = 220;
const AXIS = HEIGHT / 2;

/**
 * cash_in above the axis, cash_out below it, net as a mark, per Eastern day: hand-drawn SVG. The numbers are
 * also in a table beneath it (the chart is a picture of them, the table is what a screen reader reads).
 */
export function Chart({ flows }: { flows: DayFlow[] }) {
  const largest = Math.max(1, ...flows.flatMap((flow) => [flow.cashIn, flow.cashOut, Math.abs(flow.net)]));
  const slot = WIDTH / flows.length;
  const bar = Math.max(2, slot * 0.36);
  const scale = (cents: number) => (cents / largest) * (AXIS - 8);
  const totalIn = flows.reduce((sum, flow) => sum + flow.cashIn, 0);
  const totalOut = flows.reduce((sum, flow) => sum + flow.cashOut, 0);
  const summary = `From ${flows[0]?.day ?? ''} to ${flows.at(-1)?.day ?? ''}: cash in ${formatCents(totalIn)}, cash out ${formatCents(totalOut)}, net ${formatCents(totalIn - totalOut)}.`;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={summary} preserveAspectRatio="none">
        <line x1="0" x2={WIDTH} y1={AXIS} y2={AXIS} class="axis" />
        {flows.map((flow, i) => {
          const x = i * slot + (slot - 2 * bar) / 2;
          const up = scale(flow.cashIn);
          const down = scale(flow.cashOut);
          const net = AXIS - scale(flow.net);
          return (
            <g key={flow.day}>
              <title>{`${flow.day}: in ${formatCents(flow.cashIn)}, out ${formatCents(flow.cashOut)}, net ${formatCents(flow.net)}`}</title>
              <rect x={x} y={AXIS - up} width={bar} height={up} class="in" />
              <rect x={x + bar} y={AXIS} width={bar} height={down} class="out" />
              {(flow.cashIn > 0 || flow.cashOut > 0) && <rect x={x} y={net - 1.5} width={2 * bar} height={3} class="net" />}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <span class="key key-in">cash in</span> <span class="key key-out">cash out</span> <span class="key key-net">net</span> — {summary}
      </figcaption>
      <details>
        <summary>Numbers per day</summary>
        <Table caption="Cash in, cash out and net per Eastern day" head={['Day', 'Cash in', 'Cash out', 'Net']}>
          {flows.map((flow) => (
            <tr key={flow.day}>
              <td>{flow.day}</td>
              <td class="num">
                <Money cents={flow.cashIn} />
              </td>
              <td class="num">
                <Money cents={flow.cashOut} />
              </td>
              <td class="num">
                <Money cents={flow.net} />
              </td>
            </tr>
          ))}
        </Table>
      </details>
    </figure>
  );
}
