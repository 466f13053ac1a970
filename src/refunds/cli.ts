import type { CommandRegistrar } from '../cli/registrar';
import { getDispute } from '../disputes/contract';
import { NotFoundError } from '../orgs/contract';
import { getRefund } from './repo';

/** Operator commands: `refund show <id>` and `dispute show <id>`, across every organization. */
export const registerRefundCommands: CommandRegistrar = (program, ctx) => {
  program
    .command('refund')
    .description('refunds')
    .command('show')
    .argument('<refund_id>')
    .description('show a refund and its transaction')
    .action(async (refundId: string) => {
      const { pool, out } = ctx();
      const refund = await getRefund(pool, null, refundId);
      if (!refund) throw new NotFoundError(`no refund ${refundId}`);
      out(
        [
          `refund ${refund.id}  ${refund.status}  ${refund.amount} cents ${refund.currency}  of ${refund.intent_id}  created ${refund.created_at}`,
          `transaction ${refund.transaction.id}  ${refund.transaction.direction} ${refund.transaction.status}  date ${refund.transaction.date}`,
        ].join('\n'),
        refund,
      );
    });
  program
    .command('dispute')
    .description('disputes')
    .command('show')
    .argument('<dispute_id>')
    .description('show a dispute and its transactions')
    .action(async (disputeId: string) => {
      const { pool, out } = ctx();
      const dispute = await getDispute(pool, null, disputeId);
      if (!dispute) throw new NotFoundError(`no dispute ${disputeId}`);
      out(
        [
          `dispute ${dispute.id}  ${dispute.status}  code ${dispute.code}  ${dispute.amount} cents ${dispute.currency}  of ${dispute.intent_id}  created ${dispute.created_at}`,
          ...dispute.transactions.map((t) => `transaction ${t.id}  ${t.direction} ${t.status}  date ${t.date}`),
        ].join('\n'),
        dispute,
      );
    });
};
