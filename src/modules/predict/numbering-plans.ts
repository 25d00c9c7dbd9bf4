// The mobile numbering plans of our markets, as data: which operator a national number's prefix was allocated to,
// and the catalogue rails that operator's wallet is. Read by predict.service.ts; nothing here is code to run.
//
// Sources, per market (what each regulator allocates is published in its national numbering plan):
// - Prefixes: libphonenumber's carrier data (google/libphonenumber, resources/carrier/en/<country code>.txt, the
//   snapshot of 2026-07-17), which follows the regulators' allocations: Kenya CA (Communications Authority of Kenya),
//   Ghana NCA, Uganda UCC, Tanzania TCRA, Rwanda RURA, Zambia ZICTA, Nigeria NCC, Côte d'Ivoire ARTCI (the 10-digit
//   plan of 31 January 2021: 01 Moov, 05 MTN, 07 Orange, as ARTCI's portability FAQ states) and Senegal ARTP.
//   Non-mobile leading digits: libphonenumber's metadata (resources/PhoneNumberMetadata.xml, fixedLine patterns), and
//   for Kenya the CA's release of 01 (people: 0110-0111 Safaricom, 0100-0102 Airtel) and 03 (machine-to-machine) of
//   April 2019, as the Kenyan press reported it.
// - Portability: Kenya (CA, 2011), Ghana (NCA, 2011), Nigeria (NCC, 2013), Tanzania (TCRA, 1 March 2017), Côte d'Ivoire
//   (ARTCI, 3 September 2018) and Senegal (ARTP, 2015) port mobile numbers. Uganda does not (UCC has not implemented
//   it; Parliament urged it in March 2025). Rwanda's operators tendered a portability clearinghouse in March 2025 (RURA);
//   we found no launch, so it is marked as not porting (unconfirmed). Zambia: no portability found (unconfirmed).
//
// Not confirmed against the regulator's own table (we had libphonenumber's data only): Kenya 014, 018 (Safaricom) and
// 0120, 0121, 0124, 013; Ghana 023 (AT, formerly Glo) and 028 (Expresso, which stopped service); Uganda 0721, 0724,
// 0726-0728, 0736, 0737, 0790-0795, 0798-0799; Tanzania 066 and 072; Zambia 055-058, 078, 098; Nigeria 0704, 0707,
// 0911; Senegal 71, 72, 75, 79. A prefix missing here answers 400 `phone_number_unknown_prefix` rather than a guess.
//
// `rails` name catalogue rail ids (default-catalogue.ts). An operator's wallet without a rail id of ours (Telkom
// Kenya's T-Kash, AT Money, Tigo Pesa/Mixx, Moov Money, Glo…) has none: the prediction names the operator and no rail.
// Only rails the loaded catalogue offers in the market are ever answered, so a CATALOGUE_FILE without a rail hides it.

export interface OperatorPlan {
  /** The operator's name as payers know it. */
  operator: string;
  /** Catalogue rail ids of the operator's own wallet, best first. */
  rails: readonly string[];
  /** Leading digits of the national number (no trunk 0, no country code); the longest match wins. */
  prefixes: readonly string[];
}

export interface NumberingPlan {
  /** Must equal the catalogue market's `phone.country_code`, else the plan is not used for it. */
  country_code: string;
  /** Whether a mobile number can move to another operator and keep its prefix. */
  portability: boolean;
  /** Rails open to a number of any operator (Wave's wallet is opened on any mobile number). */
  any_operator_rails: readonly string[];
  /** Leading digits of national numbers that are not mobile (fixed lines). */
  not_mobile: readonly string[];
  operators: readonly OperatorPlan[];
}

export const NUMBERING_PLANS: Readonly<Record<string, NumberingPlan>> = {
  KE: {
    country_code: '254',
    portability: true,
    any_operator_rails: [],
    not_mobile: ['2', '3', '4', '5', '6'],
    operators: [
      {
        operator: 'Safaricom',
        rails: ['mpesa'],
        prefixes: ['11', '14', '18', '70', '71', '72', '74', '757', '758', '759', '768', '769', '79'],
      },
      { operator: 'Airtel', rails: ['airtel_money'], prefixes: ['10', '73', '75', '761', '762', '78'] },
      { operator: 'Telkom', rails: [], prefixes: ['120', '77'] },
      { operator: 'Finserve (Equitel)', rails: [], prefixes: ['124', '763', '764', '765', '766'] },
      { operator: 'Homeland Media', rails: [], prefixes: ['744'] },
      { operator: 'JTL', rails: [], prefixes: ['747'] },
      { operator: 'Mobile Pay', rails: [], prefixes: ['760'] },
      { operator: 'Sema Mobile', rails: [], prefixes: ['767'] },
      { operator: 'Infura', rails: [], prefixes: ['121'] },
      { operator: 'NRG Media', rails: [], prefixes: ['13'] },
    ],
  },
  GH: {
    country_code: '233',
    portability: true,
    any_operator_rails: [],
    not_mobile: ['3'],
    operators: [
      { operator: 'MTN', rails: ['mtn_momo'], prefixes: ['24', '25', '53', '54', '55', '59'] },
      { operator: 'Telecel', rails: ['vodafone_cash'], prefixes: ['20', '50'] },
      { operator: 'AT', rails: [], prefixes: ['23', '26', '27', '56', '57'] },
      { operator: 'Expresso', rails: [], prefixes: ['28'] },
    ],
  },
  UG: {
    country_code: '256',
    portability: false,
    any_operator_rails: [],
    not_mobile: ['2', '3', '4'],
    operators: [
      {
        operator: 'MTN',
        rails: ['mtn_momo'],
        prefixes: ['724', '737', '76', '77', '78', '790', '791', '792', '793', '794'],
      },
      { operator: 'Airtel', rails: ['airtel_money'], prefixes: ['70', '730', '731', '74', '75', '795'] },
      { operator: 'UTL', rails: [], prefixes: ['71'] },
      { operator: 'Smile', rails: [], prefixes: ['720'] },
      { operator: 'Lycamobile', rails: [], prefixes: ['721', '726', '727'] },
      { operator: 'Savanna', rails: [], prefixes: ['7210'] },
      { operator: 'Hamilton Telecom', rails: [], prefixes: ['7240', '736'] },
      { operator: 'Talkio', rails: [], prefixes: ['728'] },
      { operator: 'Africell', rails: [], prefixes: ['798', '799'] },
    ],
  },
  TZ: {
    country_code: '255',
    portability: true,
    any_operator_rails: [],
    not_mobile: ['2'],
    operators: [
      { operator: 'Vodacom', rails: ['mpesa'], prefixes: ['72', '74', '75', '76', '79'] },
      { operator: 'Airtel', rails: ['airtel_money'], prefixes: ['66', '68', '69', '78'] },
      { operator: 'Yas (Tigo)', rails: [], prefixes: ['65', '67', '70', '71', '77'] },
      { operator: 'Halotel', rails: [], prefixes: ['61', '62', '63'] },
      { operator: 'TTCL', rails: [], prefixes: ['73'] },
    ],
  },
  RW: {
    country_code: '250',
    portability: false,
    any_operator_rails: [],
    not_mobile: ['2'],
    operators: [
      { operator: 'MTN', rails: ['mtn_momo'], prefixes: ['78', '79'] },
      { operator: 'Airtel', rails: ['airtel_money'], prefixes: ['72', '73'] },
      { operator: 'KtRN', rails: [], prefixes: ['77'] },
    ],
  },
  ZM: {
    country_code: '260',
    portability: false,
    any_operator_rails: [],
    not_mobile: ['21'],
    operators: [
      { operator: 'MTN', rails: ['mtn_momo'], prefixes: ['56', '76', '96'] },
      { operator: 'Airtel', rails: ['airtel_money'], prefixes: ['57', '77', '97'] },
      { operator: 'Zamtel', rails: [], prefixes: ['55', '75', '95'] },
      { operator: 'Beeline Telecoms', rails: [], prefixes: ['58', '78', '98'] },
    ],
  },
  NG: {
    country_code: '234',
    portability: true,
    any_operator_rails: [],
    not_mobile: ['1', '2', '3', '4', '5', '6'],
    operators: [
      {
        operator: 'MTN',
        rails: ['mtn_momo'],
        prefixes: [
          '7025',
          '7026',
          '703',
          '704',
          '706',
          '707',
          '803',
          '806',
          '810',
          '813',
          '814',
          '816',
          '903',
          '906',
          '913',
          '916',
        ],
      },
      {
        operator: 'Airtel',
        rails: ['airtel_money'],
        prefixes: ['701', '708', '802', '808', '812', '901', '902', '904', '907', '911', '912'],
      },
      { operator: 'Glo', rails: [], prefixes: ['705', '805', '807', '811', '815', '905', '915'] },
      { operator: '9mobile', rails: [], prefixes: ['809', '817', '818', '908', '909'] },
      { operator: 'Ntel', rails: [], prefixes: ['7021', '7022', '804'] },
      { operator: 'Smile', rails: [], prefixes: ['7020'] },
    ],
  },
  CI: {
    country_code: '225',
    portability: true,
    any_operator_rails: ['wave'],
    not_mobile: ['2'],
    operators: [
      { operator: 'Orange', rails: ['orange_money'], prefixes: ['07'] },
      { operator: 'MTN', rails: ['mtn_momo'], prefixes: ['05'] },
      { operator: 'Moov', rails: [], prefixes: ['01'] },
    ],
  },
  SN: {
    country_code: '221',
    portability: true,
    any_operator_rails: ['wave'],
    not_mobile: ['3'],
    operators: [
      { operator: 'Orange', rails: ['orange_money'], prefixes: ['71', '77', '78'] },
      { operator: 'Free (Yas)', rails: [], prefixes: ['76'] },
      { operator: 'Expresso', rails: [], prefixes: ['70'] },
      { operator: 'Promobile', rails: [], prefixes: ['75'] },
      { operator: 'HAYO', rails: [], prefixes: ['72'] },
      { operator: 'ADIE', rails: [], prefixes: ['79'] },
    ],
  },
};
