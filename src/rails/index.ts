import type { Config } from '../config';

/**
 * The payment network behind one interface (SPEC §9), so a real rail (ACH, RTP, a card processor) can
 * replace the sandbox simulator without touching the workflows: they only learn HOW the outcome will
 * arrive, and wait for it durably.
 */
export type RailOutcome =
  /** The network will not call back; treat the step as done after this many seconds (a durable timer). */
  | { kind: 'after_seconds'; seconds: number }
  /** The network calls back; the integration signals the workflow (confirmFundsSignal / transferSettledSignal). */
  | { kind: 'signal' };

export interface RailPayment {
  transactionId: string;
  accountId: string;
  direction: 'cash_in' | 'cash_out';
  amountCents: number;
  /** It is an ACH entry (its intent names a bank account, SPEC §24): the ACH window settles it and signals. */
  achEntry: boolean;
  /**
   * The bank moved this money already: the cash_in of a returned credit's dispute (SPEC §25). The credit came back
   * to the ODFI, and a dispute transaction makes no entry (§24), so no network will confirm it later: it counts as
   * confirmed at once, in sandbox and production alike.
   */
  movedByBank: boolean;
}

export interface RailTransfer {
  transferId: string;
  accountId: string;
  direction: 'disbursement' | 'collection';
  amountCents: number;
  /**
   * It is a CCD entry (its settlement account has an operator bank account, SPEC §24): the ACH window settles
   * it and signals networkSettled. Without one, production's transfer waits for a rail signal (see docs/ach.md).
   */
  achEntry: boolean;
}

export interface PaymentRail {
  readonly name: string;
  /** Hands one payment to the network. For cash_in the outcome says when funds count as confirmed. */
  submitPayment(payment: RailPayment): Promise<RailOutcome>;
  /** Hands one net transfer to the network; the outcome says when it counts as settled. */
  submitTransfer(transfer: RailTransfer): Promise<RailOutcome>;
}

/**
 * The sandbox network: confirms a deposit without a bank account after SANDBOX_CONFIRM_SECONDS and settles
 * every transfer without an ACH entry after SANDBOX_SETTLE_SECONDS; /simulate endpoints signal earlier. A deposit that is an ACH
 * entry goes the production road (SPEC §24): the ACH window files it to the simulated bank and signals when
 * it settles, SANDBOX_CONFIRM_SECONDS after it was recorded.
 */
export class SandboxRail implements PaymentRail {
  readonly name = 'sandbox';
  constructor(
    private readonly confirmSeconds: number,
    private readonly settleSeconds: number,
  ) {}

  async submitPayment(payment: RailPayment): Promise<RailOutcome> {
    if (payment.movedByBank) return { kind: 'after_seconds', seconds: 0 };
    return payment.achEntry ? { kind: 'signal' } : { kind: 'after_seconds', seconds: this.confirmSeconds };
  }

  async submitTransfer(transfer: RailTransfer): Promise<RailOutcome> {
    return transfer.achEntry ? { kind: 'signal' } : { kind: 'after_seconds', seconds: this.settleSeconds };
  }
}

/**
 * Production until a real network adapter is configured: nothing is assumed; confirmations and settlements
 * arrive only as signals sent by the rail's integration (or an operator).
 */
export class CallbackRail implements PaymentRail {
  readonly name = 'callback';
  async submitPayment(payment: RailPayment): Promise<RailOutcome> {
    return payment.movedByBank ? { kind: 'after_seconds', seconds: 0 } : { kind: 'signal' };
  }
  async submitTransfer(_transfer: RailTransfer): Promise<RailOutcome> {
    return { kind: 'signal' };
  }
}

/** The rail of this deployment: the simulator in sandbox, callbacks in production. */
export function railFor(config: Config): PaymentRail {
  return config.LEDGER_ENVIRONMENT === 'sandbox'
    ? new SandboxRail(config.SANDBOX_CONFIRM_SECONDS, config.SANDBOX_SETTLE_SECONDS)
    : new CallbackRail();
}
