// The bankAccounts feature as other features see it: they import it only through this module (the
// dependency lint's features-meet-through-contracts, docs/development.md "Layers"), so what one feature
// takes from another is this list.
export { openBankAccounts, openOperatorBankAccounts, organizationAchOf, type AchAccountDetails } from './achDetails';
export { bankAccountDisabled, disableBankAccounts, renderBankAccount, type BankAccountRow } from './repo';
export { accountNumberInput, accountTypeSchema, bankAccountSchema, type AccountType } from './schemas';
export { accountFingerprint, openAccountNumber, openFileText, sealAccountNumber, sealFileText } from './sealing';
export { bankAccountFromToken } from './service';
