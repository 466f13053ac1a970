import { DIRECTIONS, type Direction } from '../directions';
import { dateTime, idExample, z } from '../zod';

/** SPEC §26: the limits resource and self-exclusion, one zod schema each for validation, types and /openapi.json. */

export const LIMIT_PERIODS = ['day', 'week', 'month'] as const;
export type LimitPeriod = (typeof LIMIT_PERIODS)[number];
export { DIRECTIONS };
export type { Direction };

export const LIMITS_LIMITS = {
  /** A limit above any single payment (LEDGER_LIMITS.amountCentsMax) times a month's worth is a typo. */
  limitCentsMax: 1_000_000_000_000,
  /** SPEC §26: a self-exclusion lasts 1 day to 5 years (or is indefinite). */
  selfExclusionDaysMin: 1,
  selfExclusionYearsMax: 5,
};

const limitCents = z
  .number({ error: 'must be an integer number of cents ≥ 0, or null for no limit' })
  .int({ error: 'must be an integer number of cents ≥ 0, or null for no limit' })
  .min(0, { error: 'must be ≥ 0 (cents), or null for no limit' })
  .max(LIMITS_LIMITS.limitCentsMax)
  .nullable()
  .openapi({ description: 'US cents; null: no limit.', example: 50_000 });

/** Refuses keys outside `known`, each as its own issue at its own path (`cash_in.year`), so `param` names it. */
function onlyKeys(known: readonly string[], message: string) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
    for (const key of Object.keys(value)) if (!known.includes(key)) ctx.addIssue({ code: 'custom', path: [key], message });
  };
}

const periodsBody = z
  .looseObject({ day: limitCents.optional(), week: limitCents.optional(), month: limitCents.optional() })
  .superRefine(onlyKeys(LIMIT_PERIODS, 'is not a period: use day, week or month'))
  .openapi('LimitPeriodsUpdate', { description: 'Each period given is set; a period left out keeps its limit.' });

export const limitsUpdateBody = z
  .looseObject({ cash_in: periodsBody.optional(), cash_out: periodsBody.optional() })
  .superRefine(onlyKeys(DIRECTIONS, 'is not a direction: use cash_in or cash_out'))
  .openapi('LimitsUpdate', { example: { cash_in: { day: 10_000, month: 100_000 }, cash_out: { week: null } } });
export type LimitsUpdateBody = z.infer<typeof limitsUpdateBody>;

const periodLimits = z
  .object({ day: limitCents, week: limitCents, month: limitCents })
  .openapi('LimitPeriods', { description: 'The limit of each Eastern calendar period in force now; null: none.' });

const pendingRaise = z
  .object({
    direction: z.enum(DIRECTIONS),
    period: z.enum(LIMIT_PERIODS),
    amount: limitCents.openapi({ description: 'The limit it will become (null: none).' }),
    effective_at: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('PendingLimitRaise');

const periodUse = z.object({ day: z.number().int(), week: z.number().int(), month: z.number().int() }).openapi('LimitPeriodsUsed', {
  description: 'Cents approved in the current Eastern day, ISO week (Monday first) and month, net of refunds and returns.',
});

export const limitsSchema = z
  .object({
    user_id: z.string().openapi({ example: idExample('user') }),
    cash_in: periodLimits,
    cash_out: periodLimits,
    pending: z.array(pendingRaise).openapi({
      description: 'Raises and removals waiting out the cooling-off (LIMIT_RAISE_COOLING_OFF_HOURS), each with when it takes effect.',
    }),
    used: z.object({ cash_in: periodUse, cash_out: periodUse }),
    updated_at: z
      .string()
      .nullable()
      .openapi({ format: 'date-time', description: 'The last change of the user’s own limits; null: never.' }),
  })
  .openapi('Limits');
export type Limits = z.infer<typeof limitsSchema>;
export type PendingRaise = z.infer<typeof pendingRaise>;

/** What `decline_limit` says of the limit an intent would have gone over. */
export const declineLimitSchema = z
  .object({
    direction: z.enum(DIRECTIONS),
    period: z.enum(LIMIT_PERIODS),
    limit: z.number().int().openapi({ description: 'The limit in cents.' }),
    used: z.number().int().openapi({ description: 'What the period had used before this intent, in cents.' }),
  })
  .openapi('DeclineLimit');
export type DeclineLimit = z.infer<typeof declineLimitSchema>;

export const selfExclusionBody = z
  .object({
    until: z.union([dateTime, z.literal('indefinite')]).openapi({
      description:
        'When the exclusion ends: a date-time 1 day to 5 years ahead of the request (checked beyond this schema), or `indefinite`.',
      'x-refined': '1 day to 5 years ahead',
      example: 'indefinite',
    }),
  })
  .strict()
  .openapi('SelfExclusionCreate');
export type SelfExclusionBody = z.infer<typeof selfExclusionBody>;
